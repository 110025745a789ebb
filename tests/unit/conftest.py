"""The unit tier is pure logic: no test here may open a TCP connection or listen.

Tests that need a socket (a real RemotingClient/RemotingServer on loopback) belong in
``tests/component`` (in-process servers) or ``tests/integration`` (server processes). An
unconnected UDP socket (the local-IP lookup of ``message_id``; no packet leaves) is allowed.
"""

from __future__ import annotations

import socket
from collections.abc import Callable

import pytest


def _guard(original: Callable[..., object]) -> Callable[..., object]:
    def guarded(self: socket.socket, *args: object) -> object:
        if self.type == socket.SOCK_STREAM:
            raise AssertionError("a unit test opened a TCP socket: move it to tests/component")
        return original(self, *args)

    return guarded


@pytest.fixture(autouse=True)
def _no_tcp(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("connect", "connect_ex", "bind"):
        monkeypatch.setattr(socket.socket, name, _guard(getattr(socket.socket, name)))
