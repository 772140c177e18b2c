#!/usr/bin/env bash
# Builds the multi-call control-plane binary (etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, kubectl) from the pinned Go module in
# hack/controlplane, once, into a cache outside the clone.
#
# The build itself is hack/build-go-binary.sh. The cache key is a hash of go.mod, go.sum, the Go sources and the Go version,
# so a fresh clone on the same machine reuses the binary and a changed pin
# rebuilds it. Prints the path of the binary on its last line of stdout.
#
# Environment:
#   KCP_CACHE_DIR  where built binaries live (default ~/.cache/pyscheduler/kcp)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
exec "$here/build-go-binary.sh" "$here/controlplane" kcp "control plane" \
  "${KCP_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pyscheduler/kcp}"
