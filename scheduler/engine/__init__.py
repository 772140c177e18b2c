"""The engine room: the scheduling engine assembled from the floors.

``core`` wires informers, cache, queue and one framework per profile into a
running engine; ``eventhandlers`` turns informer events into cache and queue
calls; ``profilehandle`` is the concrete ``Handle`` a profile's plugins see;
``assembly`` resolves a configuration's profiles against the plugin registry.
The engine uses the ops and services rooms and the floors, never the app room.
"""
