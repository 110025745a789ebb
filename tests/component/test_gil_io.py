"""rocketq.remoting.gil_io: the socket calls that keep the GIL, and a Connection either way."""

from __future__ import annotations

import errno
import os
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest

from rocketq.protocol.frame import RemotingCommand, decode_frame
from rocketq.remoting import gil_io
from rocketq.remoting.connection import BLOCKED, Connection

pytestmark = pytest.mark.skipif(not gil_io.available(), reason="no GIL-holding socket calls on this platform")


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    """A connected loopback TCP pair (both blocking, as created)."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        a = socket.create_connection(listener.getsockname())
        b, _ = listener.accept()
    try:
        yield a, b
    finally:
        a.close()
        b.close()


def test_available_on_linux_and_opt_in() -> None:
    if sys.platform.startswith("linux"):
        assert gil_io.available()
    opted_in = os.environ.get(gil_io.HOLD_ENV) == "1"
    assert gil_io.ENABLED is opted_in


def test_send_and_recv_round_trip(pair: tuple[socket.socket, socket.socket]) -> None:
    a, b = pair
    assert gil_io.send(a.fileno(), b"hello, broker") == 13
    buf = gil_io.RecvBuffer(64)
    b.settimeout(5)
    b.recv(0)  # nothing: just lets the bytes arrive below
    got = 0
    while got == 0:
        try:
            got = gil_io.recv_into(b.fileno(), buf)
        except BlockingIOError:
            continue
    assert bytes(buf.view[:got]) == b"hello, broker"[:got]


def test_recv_never_waits_even_on_a_blocking_socket(pair: tuple[socket.socket, socket.socket]) -> None:
    # holding the GIL while blocked would stop every thread: MSG_DONTWAIT answers at once
    _, b = pair
    assert b.getblocking()
    with pytest.raises(BlockingIOError):
        gil_io.recv_into(b.fileno(), gil_io.RecvBuffer(16))


def test_a_full_buffer_refuses_without_waiting_and_loses_nothing(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    a, b = pair
    assert a.getblocking()
    chunk = os.urandom(65536)
    sent = bytearray()
    while True:
        try:
            n = gil_io.send(a.fileno(), chunk)
        except BlockingIOError:
            break
        sent += chunk[:n]
    received = bytearray()
    b.settimeout(5)
    while len(received) < len(sent):
        received += b.recv(1 << 20)
    assert received == sent


def test_a_send_offers_the_kernel_at_most_the_cap(
    pair: tuple[socket.socket, socket.socket], monkeypatch: pytest.MonkeyPatch
) -> None:
    # the length goes to libc as a C int: a longer buffer is offered in part, as a short send
    a, b = pair
    monkeypatch.setattr(gil_io, "_MAX_SEND", 4)
    assert gil_io.send(a.fileno(), b"abcdefgh") == 4
    b.settimeout(5)
    assert b.recv(16) == b"abcd"


def test_end_of_stream_reads_zero(pair: tuple[socket.socket, socket.socket]) -> None:
    a, b = pair
    a.shutdown(socket.SHUT_WR)
    b.settimeout(5)
    assert b.recv(1) == b""  # the FIN is there
    assert gil_io.recv_into(b.fileno(), gil_io.RecvBuffer(16)) == 0


def test_errors_raise_as_the_socket_methods_do(pair: tuple[socket.socket, socket.socket]) -> None:
    a, b = pair
    b.close()
    failure: OSError | None = None
    for _ in range(100):  # the first send may still be taken; the reset follows
        try:
            gil_io.send(a.fileno(), b"x" * 1024)
        except OSError as exc:
            failure = exc
            break
    assert isinstance(failure, (BrokenPipeError, ConnectionResetError))
    with pytest.raises(OSError) as info:
        gil_io.send(-1, b"x")
    assert info.value.errno == errno.EBADF
    with pytest.raises(OSError) as info:
        gil_io.recv_into(-1, gil_io.RecvBuffer(4))
    assert info.value.errno == errno.EBADF


@pytest.mark.parametrize(("value", "held"), [("1", "True"), ("0", "False"), (None, "False")])
def test_the_environment_turns_it_on(value: str | None, held: str) -> None:
    code = (
        "import socket; from rocketq.remoting import gil_io;"
        "from rocketq.remoting.connection import Connection;"
        "a, b = socket.socketpair();"
        "print(gil_io.ENABLED, Connection('x', a, 1024).hold_gil,"
        " Connection('x', b, 1024, tls=True).hold_gil)"
    )
    env = {k: v for k, v in os.environ.items() if k != gil_io.HOLD_ENV}
    if value is not None:
        env[gil_io.HOLD_ENV] = value
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.split() == [held, held, "False"]


def _unsent(conn: Connection) -> memoryview | None:
    return conn.out_buf


@pytest.mark.parametrize("hold_gil", [True, False])
def test_a_connection_sends_and_reads_frames_either_way(
    pair: tuple[socket.socket, socket.socket], hold_gil: bool
) -> None:
    a, b = pair
    a.setblocking(False)
    conn = Connection("127.0.0.1:1", a, 1 << 20)
    assert conn.hold_gil == gil_io.ENABLED  # off unless opted in
    conn.hold_gil = hold_gil
    frames = [RemotingCommand.request(10 + i, {"k": str(i)}, b"b" * i).encode() for i in range(3)]
    conn.out_queue.extend(frames)
    assert conn.drain_locked() is None
    wire = b"".join(frames)
    b.settimeout(5)
    got = b""
    while len(got) < len(wire):
        got += b.recv(1 << 16)
    assert got == wire
    answer = RemotingCommand.request(42, {"x": "y"}, b"body").encode()
    b.sendall(answer)
    a.settimeout(5)
    a.recv(0)
    a.setblocking(False)
    commands: list[RemotingCommand] = []
    while not commands:
        commands, failure, error = conn.read()
        assert failure is None and error is None
    assert [c.code for c in commands] == [42] and commands[0].body == b"body"
    assert (conn.rbuf_c is not None) == hold_gil
    # a send the kernel cannot take at all: the rest waits in out_buf, nothing is lost
    big = b"z" * (8 << 20)
    conn.out_queue.append(big)
    assert conn.drain_locked() is BLOCKED and _unsent(conn) is not None
    received = 0
    while received < len(big):
        received += len(b.recv(1 << 20))
        if _unsent(conn) is not None:
            conn.drain_locked()
    assert received == len(big) and _unsent(conn) is None
    assert decode_frame(frames[0]).code == 10
