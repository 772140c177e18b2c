#!/usr/bin/env bash
# Builds the multi-call node binary (kubelet, kube-proxy) for the end-to-end
# suite from the pinned Go module in hack/node (same k8s.io/kubernetes pin and
# replace directives as hack/controlplane), once, into a cache outside the clone.
#
# The build itself is hack/build-go-binary.sh. The cache key is a hash of go.mod, go.sum, the Go sources and the Go version,
# so a fresh clone on the same machine reuses the binary and a changed pin
# rebuilds it. Prints the path of the binary on its last line of stdout.
#
# Environment:
#   KNODE_CACHE_DIR  where built binaries live (default ~/.cache/pyscheduler/node)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
exec "$here/build-go-binary.sh" "$here/node" knode "node" \
  "${KNODE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pyscheduler/node}"
