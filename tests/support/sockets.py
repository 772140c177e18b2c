"""The test process's open sockets, to prove a component leaves none behind
(an unclosed transport is otherwise only seen as a ResourceWarning at garbage
collection, often during a later test). Linux only: reads ``/proc/self/fd``."""

from __future__ import annotations

import contextlib
import os
import socket

PROC_FDS = "/proc/self/fd"


def can_count() -> bool:
    return os.path.isdir(PROC_FDS)


def open_sockets() -> set[str]:
    """The open sockets, as ``socket:[inode]`` (stable across fd reuse)."""
    found = set()
    for fd in os.listdir(PROC_FDS):
        with contextlib.suppress(OSError):  # closed since listed
            target = os.readlink(f"{PROC_FDS}/{fd}")
            if target.startswith("socket:"):
                found.add(target)
    return found


def socket_id(sock: socket.socket) -> str:
    """``sock`` as ``open_sockets`` names it."""
    return f"socket:[{os.fstat(sock.fileno()).st_ino}]"
