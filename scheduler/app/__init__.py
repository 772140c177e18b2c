"""The application room: the composition root and the command line.

``root`` builds and owns every long-lived task of the daemon (``SchedulerApp``),
``cli`` is the ``pyscheduler`` command, ``flags`` and ``gateflags`` turn
kube-scheduler's flags into a configuration, ``buildinfo`` says what is
running. Nothing below this room imports it.
"""
