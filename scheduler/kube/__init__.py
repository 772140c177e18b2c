"""The API boundary: the only package that talks HTTP to the kube-apiserver.

Modules:
- ``resources``: ``ResourceType`` (group/version/plural/kind) and path building. Pure.
- ``errors``: ``ApiError``, ``TransportError``, ``WatchTimeout``. Pure.
- ``wire``: sans-I/O request and response handling (watch-line splitting and
  parsing, query strings, Status bodies, request bodies). Pure.
- ``protobuf``: sans-I/O Kubernetes protobuf for bindings, events.k8s.io
  Events and error ``Status`` answers, hand-written from the proto field numbers. Pure.
- ``ratelimit``: the client-side priority token bucket (pure core, thin async waiter).
- ``client``: ``KubeClient``, the async client over aiohttp. Only this module
  (and ``connection``) imports ``kubernetes_asyncio`` or ``aiohttp``.
- ``events``, ``eventseries``: the events.k8s.io/v1 writer and its series aggregation.
- ``writer``: the framework's ``ApiWriter`` on top of ``KubeClient``.

This ``__init__`` deliberately imports nothing, so that pure consumers (the
informers import ``resources`` and ``errors``) never load aiohttp or
kubernetes_asyncio.
"""
