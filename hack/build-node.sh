#!/usr/bin/env bash
# Builds the multi-call node binary (kubelet, kube-proxy) for the end-to-end
# suite from the pinned Go module in hack/node (same k8s.io/kubernetes pin and
# replace directives as hack/controlplane), once, into a cache outside the clone.
#
# The cache key is a hash of go.mod, go.sum, the Go sources and the Go version,
# so a fresh clone on the same machine reuses the binary and a changed pin
# rebuilds it. Prints the path of the binary on its last line of stdout.
#
# Environment:
#   KNODE_CACHE_DIR  where built binaries live (default ~/.cache/pyscheduler/node)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src="$here/node"
cache_root=${KNODE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pyscheduler/node}

export GOTOOLCHAIN=local
export CGO_ENABLED=0
# Never rewrite go.mod/go.sum during a build: they are part of the cache key.
export GOFLAGS="-mod=readonly -buildvcs=false"

go_version=$(go env GOVERSION)
key=$(cd "$src" && cat go.mod go.sum ./*.go | { cat; echo "$go_version"; } | sha256sum | cut -c1-16)
out_dir="$cache_root/$key"
binary="$out_dir/knode"

if [[ -x "$binary" ]]; then
  echo "node: cached binary $binary" >&2
  echo "$binary"
  exit 0
fi

mkdir -p "$out_dir"
start=$(date +%s)
echo "node: building $key with $go_version (cold: many minutes on 2 cores)" >&2
echo "node: downloading modules" >&2
(cd "$src" && go mod download -x 2>&1 | grep -c '^# get' | sed 's/^/node: modules fetched: /' >&2 || true)

k8s_version=$(cd "$src" && go list -m -f '{{.Version}}' k8s.io/kubernetes)
minor=$(echo "$k8s_version" | cut -d. -f2)
ldflags="-s -w"
ldflags+=" -X k8s.io/component-base/version.gitMajor=1"
ldflags+=" -X k8s.io/component-base/version.gitMinor=$minor"
ldflags+=" -X k8s.io/component-base/version.gitVersion=$k8s_version"
ldflags+=" -X k8s.io/component-base/version.gitTreeState=clean"

# `go build -v` names each package as it is compiled: count them as progress.
total=$(cd "$src" && go list -deps . | wc -l)
echo "node: compiling up to $total packages" >&2
tmp="$out_dir/knode.tmp.$$"
(cd "$src" && go build -v -trimpath -tags grpcnotrace -ldflags "$ldflags" -o "$tmp" .) 2>&1 |
  awk -v total="$total" '
    /^#/ || /:[0-9]+:/ { print > "/dev/stderr"; next }
    { n++; if (n % 100 == 0) printf "node: compiled %d/%d packages\n", n, total > "/dev/stderr" }
    END { printf "node: compiled %d packages, linked\n", n > "/dev/stderr" }'
status=${PIPESTATUS[0]}
if [[ $status -ne 0 || ! -x "$tmp" ]]; then
  rm -f "$tmp"
  echo "node: build failed" >&2
  exit 1
fi
mv "$tmp" "$binary"
echo "node: built $binary in $(( $(date +%s) - start ))s" >&2
echo "$binary"
