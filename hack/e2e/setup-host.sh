#!/usr/bin/env bash
# Host set-up for the end-to-end suite (`make e2e`): checks that this is a
# Debian machine and that we are root, then installs the distribution packages
# the suite runs (containerd, runc, CNI plugins, buildah, debootstrap,
# prometheus, conntrack, iptables) when any is missing. Changes nothing else:
# no service is enabled or started (the suite runs its own containerd).
set -euo pipefail

packages=(containerd runc containernetworking-plugins buildah debootstrap prometheus conntrack iptables)

if [[ $(uname -s) != Linux ]]; then
  echo "e2e: needs Linux (containerd, runc, iptables, a kubelet); this is $(uname -s)" >&2
  exit 2
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "e2e: needs root (it runs containerd, a kubelet and kube-proxy, and builds images with buildah); run: sudo make e2e" >&2
  exit 2
fi
if [[ ! -r /etc/debian_version ]] || ! command -v apt-get >/dev/null; then
  echo "e2e: needs Debian 12 (bookworm) or a derivative with apt-get, to install: ${packages[*]}" >&2
  exit 2
fi
command -v go >/dev/null || { echo "e2e: needs Go 1.26+ on PATH (kubelet, kube-proxy, the pause program)" >&2; exit 2; }

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q '^install ok installed$' || missing+=("$package")
done
if (( ${#missing[@]} )); then
  echo "e2e: installing ${missing[*]}" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
  # The containerd package starts the system-wide service; the suite never uses
  # it (it runs its own with its own socket), so leave the machine as it was.
  if command -v systemctl >/dev/null && systemctl is-active --quiet containerd 2>/dev/null; then
    echo "e2e: note: the distribution's containerd service is running; the suite does not use it" >&2
  fi
fi
echo "e2e: host ready ($(containerd --version | awk '{print $3}'), runc $(runc --version | awk 'NR==1{print $3}'), $(buildah --version | awk '{print $1, $3}'))" >&2
