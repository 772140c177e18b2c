"""``pyscheduler simulate``: the real engine over a snapshot, without a cluster.

Modules:
- ``snapshot``: reading ``kubectl get -o yaml`` output, with located errors.
- ``edits``: what-if edits (add, remove and cordon nodes).
- ``memory``: ``MemoryCluster``, the client boundary over in-memory objects.
- ``clock``: ``SimClock``, time that moves only when the simulator says so.
- ``run``: ``Simulation``, driving the shared ``scheduler.engine.core.Engine``
  until the cluster is quiet.
- ``report``: where pods landed and why not, victims, allocations, usage.
- ``cli``: the command line.
"""
