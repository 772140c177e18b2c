#!/usr/bin/env bash
# Builds krew's manifest validator (validate-krew-manifest, what krew-index's
# CI runs on every plugin manifest) from the pinned Go module in hack/krew
# (sigs.k8s.io/krew, a `tool` of that module), once, into a cache outside the
# clone, for tests/unit/test_krew_manifest.py and `make tools`.
#
# The build itself is hack/build-go-binary.sh (cache key: go.mod, go.sum and
# the Go version). Prints the path of the binary on its last line of stdout.
#
# Environment:
#   KREW_CACHE_DIR  where built binaries live (default ~/.cache/pyscheduler/krew)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
exec "$here/build-go-binary.sh" "$here/krew" validate-krew-manifest "krew validator" \
  "${KREW_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pyscheduler/krew}" \
  sigs.k8s.io/krew/cmd/validate-krew-manifest
