#!/usr/bin/env bash
# Builds the upstream Prometheus server pinned in hack/prometheus (go.mod), once,
# into ~/.cache/pyscheduler/prometheus/<key>/prometheus (key: go.mod, go.sum,
# tools.go, Go version). Needed because Debian's prometheus 2.42.0+ds is built
# without Kubernetes service discovery ("field kubernetes_sd_configs not found
# in type config.ScrapeConfig"). Prints the binary's path on its last line.
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../prometheus" && pwd)
script=$(realpath "${BASH_SOURCE[0]}")
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false"
key=$(cd "$src" && cat go.mod go.sum tools.go "$script" | { cat; go env GOVERSION; } | sha256sum | cut -c1-16)
out="${PROMETHEUS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pyscheduler/prometheus}/$key"
if [[ ! -x $out/prometheus ]]; then
  mkdir -p "$out"
  start=$(date +%s)
  version=$(cd "$src" && go list -m -f '{{.Version}}' github.com/prometheus/prometheus)
  echo "prometheus: building $version (cold: several minutes on 2 cores)" >&2
  # Module v0.3XY.Z is Prometheus 3.XY.Z.
  release=$(echo "$version" | sed -E 's/^v0\.3([0-9]{2})\.([0-9]+).*/3.\1.\2/; s/^3\.0([0-9])/3.\1/')
  (cd "$src" && nice -n 10 go build -trimpath \
    -ldflags "-s -w -X github.com/prometheus/common/version.Version=$release -X github.com/prometheus/common/version.Revision=$version" \
    -o "$out/prometheus.tmp" github.com/prometheus/prometheus/cmd/prometheus)
  mv "$out/prometheus.tmp" "$out/prometheus"
  echo "prometheus: built in $(( $(date +%s) - start ))s" >&2
  # One binary is enough: drop those of other keys.
  find "$(dirname "$out")" -mindepth 1 -maxdepth 1 -type d ! -name "$key" -exec rm -rf {} +
fi
echo "$out/prometheus"
