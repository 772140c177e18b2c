"""The ops room: what an operator talks to and reads.

The authenticated HTTPS ops port (``server``, ``health``, ``delegation``,
``tls``, ``connlimits``), Prometheus metrics (``metrics``, ``podresources``,
``looplag``), the debugging views (``cachedebug``, ``diagnostics``), logging
(``logsetup``) and the garbage-collector policy (``gcpolicy``). Ops modules
import only the floors; plugin listeners are hosted by ``scheduler.services``.
"""
