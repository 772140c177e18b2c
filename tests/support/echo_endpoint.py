"""A ``ProcessEndpoint`` for the process-listener tests: it echoes HTTP
requests, answers calls, reports what it received, and fails on demand."""

from __future__ import annotations

import os
import time

from scheduler.framework import ChildChannel, HttpRequest, HttpResponse

CRASH = "crash"  # receive: exit the process at once (code 3)
FAIL = "fail"  # receive: raise
SLOW = "slow"  # receive: take 2 seconds to answer
COUNT = "count"  # receive: answer how many HTTP requests were handled so far
HANG = "hang"  # receive: never return (a deadlocked endpoint)


class Echo:
    def __init__(self, channel: ChildChannel) -> None:
        self._channel = channel
        self.received: list[object] = []
        self._outbox: list[object] = []
        self.http_requests = 0

    def handle(self, request: HttpRequest) -> HttpResponse:
        if request.path == "/boom":
            raise RuntimeError("boom")
        self.http_requests += 1
        self._outbox.append(("http", request.method, request.body))
        text = f"{request.method} {request.path} {request.body.decode()} after {len(self.received)}"
        return HttpResponse(200, "text/plain", text.encode())

    def receive(self, message: object) -> object:
        if message == CRASH:
            os._exit(3)
        if message == FAIL:
            raise ValueError("asked to fail")
        if message == SLOW:
            time.sleep(2)
        if message == COUNT:
            return self.http_requests
        while message == HANG:
            time.sleep(3600)
        self.received.append(message)
        self._outbox.append(("got", message))
        return ("answer", message, len(self.received))

    def idle(self) -> float | None:
        for message in self._outbox:
            self._channel.send(message)
        self._outbox.clear()
        return None


def build(channel: ChildChannel) -> Echo:
    return Echo(channel)


def broken(channel: ChildChannel) -> Echo:
    raise RuntimeError("cannot build")
