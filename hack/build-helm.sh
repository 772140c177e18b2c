#!/usr/bin/env bash
# Builds helm from the pinned Go module in hack/helm (helm.sh/helm/v4, a
# `tool` of that module: Debian and PyPI have no helm), once, into a cache
# outside the clone, for the chart test (tests/integration/test_helm_chart.py)
# and `make tools`.
#
# The build itself is hack/build-go-binary.sh. The cache key is a hash of
# go.mod, go.sum and the Go version, so a fresh clone on the same machine
# reuses the binary and a changed pin rebuilds it. Prints the path of the
# binary on its last line of stdout.
#
# Environment:
#   HELM_CACHE_DIR  where built binaries live (default ~/.cache/pyscheduler/helm)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
package=helm.sh/helm/v4/cmd/helm
version=$(cd "$here/helm" && GOTOOLCHAIN=local GOFLAGS=-mod=readonly go list -m -f '{{.Version}}' helm.sh/helm/v4)
EXTRA_LDFLAGS="-X helm.sh/helm/v4/internal/version.version=$version" \
  exec "$here/build-go-binary.sh" "$here/helm" helm "helm" \
  "${HELM_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pyscheduler/helm}" "$package"
