#!/usr/bin/env bash
# Builds krew (sigs.k8s.io/krew/cmd/krew) and its manifest validator
# (cmd/validate-krew-manifest, what krew-index's CI runs on every plugin
# manifest) from the pinned Go module in hack/krew, where both are `tool`s,
# once, into a cache outside the clone: for tests/unit/test_krew_manifest.py
# and `make tools`.
#
# The builds are hack/build-go-binary.sh's (cache key: go.mod, go.sum and the
# Go version; both binaries share the key's directory). Prints that directory,
# holding `krew` and `validate-krew-manifest`, on its last line of stdout.
#
# Environment:
#   KREW_CACHE_DIR  where built binaries live (default ~/.cache/pyscheduler/krew)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${KREW_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pyscheduler/krew}
"$here/build-go-binary.sh" "$here/krew" krew "krew" "$cache" sigs.k8s.io/krew/cmd/krew >/dev/null
validator=$("$here/build-go-binary.sh" "$here/krew" validate-krew-manifest "krew validator" "$cache" \
  sigs.k8s.io/krew/cmd/validate-krew-manifest | tail -1)
dirname "$validator"
