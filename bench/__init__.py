"""Benchmark harness: this scheduler and upstream kube-scheduler, side by side
on the same control plane."""
