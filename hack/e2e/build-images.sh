#!/usr/bin/env bash
# Builds the three images of the end-to-end suite with buildah (daemonless),
# each cached outside the clone under a key of its inputs:
#   pause-<key>.tar   the sandbox image: hack/node/pause, a static Go program
#   base-<key>/       a local Python base: debootstrap bookworm + Debian's
#                     python3 (no registry is reachable, so the Dockerfile's
#                     python:3.11.14-slim-bookworm cannot be pulled)
#   image-<key>.tar   the shipped Dockerfile, unchanged, built FROM that base
#                     with --build-arg PYTHON_IMAGE only
#   plugins-<key>.tar the same Dockerfile with out-of-tree plugins, as an
#                     operator builds it: the wheel of examples/plugin-package
#                     in a directory given as --build-context plugins=DIR
# The .tar files are docker-archives ready for `ctr images import`.
# Prints key=value lines on stdout: pause_ref, pause_archive, image_ref,
# image_archive, base_ref, plugins_ref, plugins_archive.
#
# Environment: PYSCHEDULER_E2E_CACHE (default ~/.cache/pyscheduler/e2e),
#   E2E_DEBIAN_MIRROR (default: deb.debian.org), E2E_PYTHON (the Python whose
#   pip builds the plugin wheel; default: the clone's .venv, else python3).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cache=${PYSCHEDULER_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pyscheduler/e2e}
mirror=${E2E_DEBIAN_MIRROR:-http://deb.debian.org/debian}
mkdir -p "$cache"
store="$cache/buildah"
b() { buildah --root "$store/root" --runroot "$store/run" --storage-driver vfs "$@"; }
log() { echo "e2e images: $*" >&2; }
have_image() { b inspect --type image "$1" >/dev/null 2>&1; }
hash_of() { sha256sum | cut -c1-16; }

# ------------------------------------------------------------------ pause
pause_key=$({ cat "$repo/hack/node/pause/main.go"; go env GOVERSION; } | hash_of)
pause_ref="localhost/pause:e2e-$pause_key"
pause_archive="$cache/pause-$pause_key.tar"
if [[ ! -s $pause_archive ]]; then
  start=$(date +%s)
  work=$(mktemp -d)
  (cd "$repo/hack/node" && CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-mod=readonly \
    go build -trimpath -ldflags='-s -w' -o "$work/pause" ./pause)
  c=$(b from scratch)
  b copy "$c" "$work/pause" /pause >/dev/null
  b config --entrypoint '["/pause"]' --user 65535:65535 "$c"
  b commit --quiet "$c" "$pause_ref" >/dev/null
  b rm "$c" >/dev/null
  b push --quiet "$pause_ref" "docker-archive:$pause_archive.tmp:$pause_ref"
  mv "$pause_archive.tmp" "$pause_archive"
  rm -rf "$work"
  log "pause image $pause_ref built in $(( $(date +%s) - start ))s"
fi

# ------------------------------------------------------------------- base
# What the base is made of; every input is in the key, including the host's CA
# bundle, which pip needs on hosts behind a TLS-intercepting proxy.
base_packages=python3,python3-pip,python-is-python3,ca-certificates
base_key=$({ echo "bookworm $mirror $base_packages"; dpkg-query -W -f='${Version}' debootstrap;
             cat /etc/ssl/certs/ca-certificates.crt; sed -n '/^# ---* base$/,/^# ---* image$/p' "$0"; } | hash_of)
base_ref="localhost/python-base:e2e-$base_key"
base_dir="$cache/base-$base_key"
if ! have_image "$base_ref"; then
  start=$(date +%s)
  if [[ ! -f $base_dir/.complete ]]; then
    rm -rf "$base_dir"
    mkdir -p "$base_dir"
    log "debootstrap bookworm ($base_packages) into $base_dir/rootfs (about a minute)"
    debootstrap --variant=minbase --include="$base_packages" bookworm "$base_dir/rootfs" "$mirror" \
      >"$base_dir/debootstrap.log" 2>&1 || { tail -20 "$base_dir/debootstrap.log" >&2; exit 1; }
    rootfs="$base_dir/rootfs"
    # The host's trust store (it holds the proxy's CA, if any) for pip in the
    # build stage; Debian's PEP 668 marker would make the Dockerfile's
    # `python -m pip uninstall` in the final stage fail.
    cp /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/ssl/certs/ca-certificates.crt"
    printf '[global]\ncert = /etc/ssl/certs/ca-certificates.crt\n' >"$rootfs/etc/pip.conf"
    rm -f "$rootfs"/usr/lib/python3*/EXTERNALLY-MANAGED
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* "$rootfs"/dev/*
    touch "$base_dir/.complete"
  fi
  c=$(b from scratch)
  b copy "$c" "$base_dir/rootfs" / >/dev/null
  b config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --cmd python3 "$c"
  b commit --quiet "$c" "$base_ref" >/dev/null
  b rm "$c" >/dev/null
  log "base image $base_ref built in $(( $(date +%s) - start ))s"
fi

# ------------------------------------------------------------------ image
context_files=(Dockerfile .dockerignore pyproject.toml README.md constraints.txt)
image_key=$({ echo "$base_key"; cd "$repo";
              find "${context_files[@]}" scheduler plugins -type f ! -name '*.pyc' -print0 | sort -z | xargs -0 sha256sum; } | hash_of)
image_ref="localhost/pyscheduler:e2e-$image_key"
image_archive="$cache/image-$image_key.tar"
if [[ ! -s $image_archive ]]; then
  start=$(date +%s)
  revision=$(git -C "$repo" rev-parse HEAD 2>/dev/null || echo unknown)
  log "building the Dockerfile as $image_ref FROM $base_ref"
  b bud --quiet --isolation chroot --pull-never --layers=false \
    --build-arg PYTHON_IMAGE="$base_ref" --build-arg REVISION="$revision" \
    -f "$repo/Dockerfile" -t "$image_ref" "$repo" >"$cache/image-$image_key.log" 2>&1 ||
    { tail -30 "$cache/image-$image_key.log" >&2; exit 1; }
  b push --quiet "$image_ref" "docker-archive:$image_archive.tmp:$image_ref"
  mv "$image_archive.tmp" "$image_archive"
  log "image $image_ref built in $(( $(date +%s) - start ))s"
fi

# ---------------------------------------------------------------- plugins
# The operator's way (Dockerfile, "Out-of-tree plugins"): wheels in a
# directory, handed to the unchanged Dockerfile as the `plugins` build context.
plugin_package=examples/plugin-package
plugins_key=$({ echo "$image_key"; cd "$repo";
                find "$plugin_package" -type f ! -name '*.pyc' ! -path '*/tests/*' ! -path '*.egg-info/*' \
                  ! -path '*/build/*' -print0 | sort -z | xargs -0 sha256sum; } | hash_of)
plugins_ref="localhost/pyscheduler-plugins:e2e-$plugins_key"
plugins_archive="$cache/plugins-$plugins_key.tar"
if [[ ! -s $plugins_archive ]]; then
  start=$(date +%s)
  revision=$(git -C "$repo" rev-parse HEAD 2>/dev/null || echo unknown)
  python=${E2E_PYTHON:-}
  [[ -n $python ]] || { [[ -x $repo/.venv/bin/python ]] && python=$repo/.venv/bin/python; } || python=python3
  wheels=$(mktemp -d)
  source_copy=$(mktemp -d)
  # A copy, so the build leaves nothing (build/, *.egg-info) in the clone.
  cp -r "$repo/$plugin_package/." "$source_copy"
  "$python" -m pip wheel --quiet --disable-pip-version-check --no-deps --wheel-dir "$wheels" "$source_copy" \
    >"$cache/plugins-$plugins_key.log" 2>&1 || { tail -30 "$cache/plugins-$plugins_key.log" >&2; exit 1; }
  log "building $plugins_ref with --build-context plugins=$wheels ($(cd "$wheels" && echo *.whl))"
  b bud --quiet --isolation chroot --pull-never --layers=false \
    --build-arg PYTHON_IMAGE="$base_ref" --build-arg REVISION="$revision" \
    --build-context plugins="$wheels" \
    -f "$repo/Dockerfile" -t "$plugins_ref" "$repo" >>"$cache/plugins-$plugins_key.log" 2>&1 ||
    { tail -30 "$cache/plugins-$plugins_key.log" >&2; exit 1; }
  b push --quiet "$plugins_ref" "docker-archive:$plugins_archive.tmp:$plugins_ref"
  mv "$plugins_archive.tmp" "$plugins_archive"
  rm -rf "$wheels" "$source_copy"
  log "plugin image $plugins_ref built in $(( $(date +%s) - start ))s"
fi

# Keep the cache bounded: drop archives and images of other keys.
keep=("$pause_archive" "$image_archive" "$cache/image-$image_key.log" "$plugins_archive" "$cache/plugins-$plugins_key.log")
for old in "$cache"/pause-*.tar "$cache"/image-*.tar "$cache"/image-*.log "$cache"/plugins-*.tar "$cache"/plugins-*.log; do
  [[ -e $old ]] || continue
  [[ " ${keep[*]} " == *" $old "* ]] || rm -f "$old"
done
for old in "$cache"/base-*; do
  [[ -d $old && $old != "$base_dir" ]] && rm -rf "$old"
done
b images --format '{{.Name}}:{{.Tag}}' 2>/dev/null | while read -r name; do
  case $name in
    "$pause_ref" | "$base_ref" | "$image_ref" | "$plugins_ref") ;;
    localhost/*) b rmi --force "$name" >/dev/null 2>&1 || true ;;
  esac
done
b rmi --prune >/dev/null 2>&1 || true

echo "pause_ref=$pause_ref"
echo "pause_archive=$pause_archive"
echo "base_ref=$base_ref"
echo "image_ref=$image_ref"
echo "image_archive=$image_archive"
echo "plugins_ref=$plugins_ref"
echo "plugins_archive=$plugins_archive"
