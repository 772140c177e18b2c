"""``kubectl pyscheduler explain``: why a pod is (not) where it is.

Modules:
- ``diagnosis``: the pod's last attempt as data (from ``/debug/pods`` or a
  simulated run), and its rendering: verdicts grouped by reason, nodes
  closest to fitting first with what they lack. Pure.
- ``fetch``: reading ``/debug/pods/{ns}/{name}`` from a running scheduler,
  directly (``--url``/``--port``) or through the API server's service proxy,
  with the kubeconfig's identity. Standard library HTTP only.
- ``cli``: the ``kubectl-pyscheduler`` executable.
"""
