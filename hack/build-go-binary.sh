#!/usr/bin/env bash
# Builds one multi-call Go binary from a pinned module under hack/, once, into
# a cache outside the clone; shared by build-controlplane.sh, build-node.sh,
# build-helm.sh and build-krew.sh.
#
# Usage: build-go-binary.sh <module dir> <binary name> <label> <cache root> [package]
#
# package: what to build, default the module's own main package (.); a tool
# of the module (a `tool` line of its go.mod, e.g. helm.sh/helm/v4/cmd/helm)
# for a module with no Go file of its own. Only a module that requires
# k8s.io/kubernetes gets its version stamped into component-base; EXTRA_LDFLAGS
# adds more -X flags (build-helm.sh stamps helm's version).
#
# The cache key is a hash of go.mod, go.sum, the Go sources and the Go version,
# so a fresh clone on the same machine reuses the binary and a changed pin
# rebuilds it. Prints the path of the binary on its last line of stdout.
set -euo pipefail

src=$1
name=$2
label=$3
cache_root=$4
package=${5:-.}
export GOTOOLCHAIN=local
export CGO_ENABLED=0
# Never rewrite go.mod/go.sum during a build: they are part of the cache key.
export GOFLAGS="-mod=readonly -buildvcs=false"

go_version=$(go env GOVERSION)
sources=$(cd "$src" && shopt -s nullglob && echo ./*.go)
# shellcheck disable=SC2086 # the file names, word-split on purpose
key=$(cd "$src" && cat go.mod go.sum $sources | { cat; echo "$go_version"; } | sha256sum | cut -c1-16)
out_dir="$cache_root/$key"
binary="$out_dir/$name"

if [[ -x "$binary" ]]; then
  echo "$label: cached binary $binary" >&2
  echo "$binary"
  exit 0
fi

mkdir -p "$out_dir"
start=$(date +%s)
echo "$label: building $key with $go_version (cold: many minutes on 2 cores)" >&2
echo "$label: downloading modules" >&2
(cd "$src" && go mod download -x 2>&1 | grep -c '^# get' | sed "s/^/$label: modules fetched: /" >&2 || true)

ldflags="-s -w"
if k8s_version=$(cd "$src" && go list -m -f '{{.Version}}' k8s.io/kubernetes 2>/dev/null); then
  minor=$(echo "$k8s_version" | cut -d. -f2)
  ldflags+=" -X k8s.io/component-base/version.gitMajor=1"
  ldflags+=" -X k8s.io/component-base/version.gitMinor=$minor"
  ldflags+=" -X k8s.io/component-base/version.gitVersion=$k8s_version"
  ldflags+=" -X k8s.io/component-base/version.gitTreeState=clean"
fi
ldflags+=${EXTRA_LDFLAGS:+ $EXTRA_LDFLAGS}

# `go build -v` names each package as it is compiled: count them as progress.
total=$(cd "$src" && go list -deps "$package" | wc -l)
echo "$label: compiling up to $total packages" >&2
tmp="$out_dir/$name.tmp.$$"
(cd "$src" && go build -v -trimpath -tags grpcnotrace -ldflags "$ldflags" -o "$tmp" "$package") 2>&1 |
  awk -v total="$total" -v label="$label" '
    /^#/ || /:[0-9]+:/ { print > "/dev/stderr"; next }
    { n++; if (n % 100 == 0) printf "%s: compiled %d/%d packages\n", label, n, total > "/dev/stderr" }
    END { printf "%s: compiled %d packages, linked\n", label, n > "/dev/stderr" }'
status=${PIPESTATUS[0]}
if [[ $status -ne 0 || ! -x "$tmp" ]]; then
  rm -f "$tmp"
  echo "$label: build failed" >&2
  exit 1
fi
mv "$tmp" "$binary"
echo "$label: built $binary in $(( $(date +%s) - start ))s" >&2
echo "$binary"
