#!/usr/bin/env bash
# Removes what a `make e2e` run leaves on the host once its processes are
# stopped (tests/e2e/node.py stops kubelet, kube-proxy --cleanup, containerd
# first), in the order found by hand (hack/node/README.md). Idempotent; safe
# to run again by hand after a crashed run:
#   hack/e2e/teardown.sh snapshot RUN_DIR   record what exists before the run
#   hack/e2e/teardown.sh RUN_DIR            remove what the run added
# Only touches what the run made: processes whose command line names RUN_DIR
# (containerd shims), the pods' processes in the kubelet's kubepods cgroups,
# mounts under RUN_DIR, netns and shim sockets that were not there before,
# KUBE-* iptables chains (kubelet, kube-proxy), the e2e0 bridge and the CNI
# result cache of the network pyscheduler-e2e.
set -uo pipefail

if [[ ${1:-} == snapshot ]]; then
  run_dir=$2
  mkdir -p "$run_dir"
  ip netns list 2>/dev/null | awk '{print $1}' | sort >"$run_dir/before-netns"
  ls /run/containerd/s 2>/dev/null | sort >"$run_dir/before-shim-sockets"
  ls /var/lib/cni/results 2>/dev/null | sort >"$run_dir/before-cni-results"
  exit 0
fi
run_dir=${1:?usage: teardown.sh [snapshot] RUN_DIR}
run_dir=$(realpath -m "$run_dir")
log() { echo "e2e teardown: $*" >&2; }

# 1. Shims (and the runc processes under them) of our containerd, by pid.
for proc in /proc/[0-9]*; do
  cmdline=$( { tr '\0' ' ' <"$proc/cmdline"; } 2>/dev/null) || continue
  if [[ $cmdline == *containerd-shim* && $cmdline == *"$run_dir"* ]]; then
    kill -KILL "${proc#/proc/}" 2>/dev/null && log "killed shim ${proc#/proc/}"
  fi
done
# 2. The pods' processes: everything left in the kubelet's kubepods cgroups.
for procs in $(find /sys/fs/cgroup/*/kubepods -name cgroup.procs 2>/dev/null); do
  while read -r pid; do
    [[ -n $pid ]] && kill -KILL "$pid" 2>/dev/null && log "killed pod process $pid"
  done <"$procs"
done
# 3. Mounts under the run directory (rootfs, shm, volumes), deepest first.
awk -v d="$run_dir/" 'index($2, d) == 1 {print $2}' /proc/self/mounts | sort -r | while read -r m; do
  umount -l "$m" 2>/dev/null || log "could not unmount $m"
done
# 4. Network namespaces and shim sockets created during the run.
if [[ -f $run_dir/before-netns ]]; then
  comm -13 "$run_dir/before-netns" <(ip netns list 2>/dev/null | awk '{print $1}' | sort) |
    while read -r ns; do ip netns delete "$ns" && log "deleted netns $ns"; done
fi
if [[ -f $run_dir/before-shim-sockets ]]; then
  comm -13 "$run_dir/before-shim-sockets" <(ls /run/containerd/s 2>/dev/null | sort) |
    while read -r s; do rm -f "/run/containerd/s/$s"; done
fi
if [[ -f $run_dir/before-cni-results ]]; then
  comm -13 "$run_dir/before-cni-results" <(ls /var/lib/cni/results 2>/dev/null | sort) |
    while read -r r; do rm -f "/var/lib/cni/results/$r"; done
fi
# 5. iptables: jumps into KUBE-* chains from the built-in chains, then the chains.
for tool in iptables ip6tables; do
  command -v $tool >/dev/null || continue
  for table in filter nat mangle; do
    $tool -t $table -S 2>/dev/null | grep -E '^-A [A-Z]+ .*-j KUBE-' | grep -vE '^-A KUBE-' |
      while read -r rule; do eval "$tool -t $table ${rule/-A/-D}" 2>/dev/null; done
    chains=$($tool -t $table -S 2>/dev/null | awk '$1 == "-N" && $2 ~ /^KUBE-/ {print $2}')
    for chain in $chains; do $tool -t $table -F "$chain" 2>/dev/null; done
    for chain in $chains; do $tool -t $table -X "$chain" 2>/dev/null || log "could not delete $tool $table $chain"; done
  done
done
# 6. The bridge, the CNI result cache, the pods' cgroups (empty by now).
ip link delete e2e0 2>/dev/null && log "deleted bridge e2e0"
rm -rf /var/lib/cni/results/pyscheduler-e2e-* /var/lib/cni/networks/pyscheduler-e2e
for root in /sys/fs/cgroup/*/kubepods; do
  [[ -d $root ]] && find "$root" -depth -type d -exec rmdir {} + 2>/dev/null
done
left=$(ls -d /sys/fs/cgroup/*/kubepods 2>/dev/null | wc -l)
(( left )) && log "$left kubepods cgroup roots could not be removed"
# 7. Our files (after the unmounts).
if [[ $run_dir == */pyscheduler-e2e-* ]]; then
  rm -rf "$run_dir" 2>/dev/null || log "could not remove all of $run_dir"
fi
exit 0
