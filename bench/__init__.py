"""Benchmark harness: this scheduler and upstream kube-scheduler, side by side
on the same control-plane build and machine, measured the way upstream's
scheduler_perf measures SchedulingThroughput.

Run it with ``make bench`` or ``python -m bench.run --help``. Modules:

- ``workload``: the presets, the modes (streaming, backlog, churn) and the
  node and pod templates (scheduler_perf's);
- ``steady``: the churn mode's steady-rate pod creation (its schedule pure);
- ``kubelet``: the churn mode's kubelet: three status updates per bound pod,
  then its deletion (the status bodies pure);
- ``profiles``: upstream's same-plugins profile, derived from our default one;
- ``ceiling``: the bare round-robin binder (``python -m bench.ceiling``);
- ``cpuprofile``: sampled CPU profiles (py-spy, pprof) and their reduction;
- ``throughput``: the 1 s sampling rules and the Average/Perc50..99 summary (pure);
- ``histogram``: quantiles of a Prometheus histogram scraped twice (pure);
- ``apirequests``: the apiserver's requests by verb and resource (pure);
- ``procstat``: CPU seconds and peak RSS of a process, read from ``/proc``;
- ``checks``: the correctness checks, after the run and, for pods deleted
  during it, node occupancy all along (pure);
- ``apiclient``: the thin aiohttp client the harness talks to the apiserver with;
- ``podwatch``: one pod watch that counts bound pods per namespace and tells
  its listeners (the kubelet, occupancy) of binds and deletions;
- ``schedulers``: writing the configuration, starting, probing and stopping
  each scheduler (and the ceiling) as its own process;
- ``runner``: one measured run per scheduler, each on a fresh control plane;
- ``results``: what one run produced;
- ``report``: min/median/max over the rounds, ratios and their verdicts, the
  tables and the JSON;
- ``publish``: the result files (JSON, Markdown, PNG) and the results section
  of ``docs/benchmarks.md``;
- ``run``: the command line.
"""
