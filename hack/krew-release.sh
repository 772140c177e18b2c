#!/usr/bin/env bash
# The krew release of kubectl-pyscheduler: builds the archive (the launcher
# hack/krew/kubectl-pyscheduler.sh for this version, and LICENSE) and writes
# the plugin manifest with its version, uri and sha256 filled in.
#
# Usage: hack/krew-release.sh [OUT_DIR]         (default: dist/)
#   OUT_DIR/kubectl-pyscheduler-v<version>.tar.gz   attach to the release
#   OUT_DIR/pyscheduler.yaml                        submit to krew-index
# With --update, also writes the manifest over examples/krew/pyscheduler.yaml
# (the committed one must equal what this prints: the archive is
# reproducible, sorted with fixed owners, modes and times, gzip without a
# name or a time; tests/integration/test_krew_plugin.py checks it).
#
# Environment: KREW_RELEASE_URL, the releases' download base (default
#   https://github.com/pyscheduler/pyscheduler/releases/download); the archive
#   is looked for at $KREW_RELEASE_URL/v<version>/<archive>.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
update=false
if [[ ${1:-} == --update ]]; then update=true; shift; fi
out=${1:-$repo/dist}
base_url=${KREW_RELEASE_URL:-https://github.com/pyscheduler/pyscheduler/releases/download}
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$repo/pyproject.toml" | head -1)
[[ -n $version ]] || { echo "krew-release: no version in pyproject.toml" >&2; exit 1; }
archive=kubectl-pyscheduler-v$version.tar.gz

mkdir -p "$out"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
sed "s/@VERSION@/$version/g" "$repo/hack/krew/kubectl-pyscheduler.sh" >"$stage/kubectl-pyscheduler"
cp "$repo/LICENSE" "$stage/LICENSE"
chmod 0755 "$stage/kubectl-pyscheduler"
chmod 0644 "$stage/LICENSE"
tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner --format=gnu \
  -C "$stage" -cf - LICENSE kubectl-pyscheduler | gzip -n -9 >"$out/$archive"
sha=$(sha256sum "$out/$archive" | cut -d' ' -f1)

sed -e "s|^\(  version: \).*|\1v$version|" \
    -e "s|^\( *uri: \).*|\1$base_url/v$version/$archive|" \
    -e "s|^\( *sha256: \).*|\1\"$sha\"|" \
    "$repo/examples/krew/pyscheduler.yaml" >"$out/pyscheduler.yaml"
if $update; then
  cp "$out/pyscheduler.yaml" "$repo/examples/krew/pyscheduler.yaml"
fi
echo "krew-release: $out/$archive ($sha), manifest $out/pyscheduler.yaml" >&2
echo "$out/pyscheduler.yaml"
