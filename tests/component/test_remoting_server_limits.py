"""RemotingServer against slow and greedy peers on real loopback sockets (issue #21):
the frame read timeout, the server-wide budget for unfinished frames (and the memory it
bounds), and one rate-limited WARNING line per kind of refusal, never a traceback."""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import struct
import time
from collections.abc import Iterator

import pytest

from rocketq.protocol.codes import RequestCode
from rocketq.protocol.frame import LARGE_FRAME, FrameDecoder, RemotingCommand
from rocketq.remoting.server import Channel, RemotingServer, ServerThread
from rocketq.testing.waits import wait_until

pytestmark = pytest.mark.timeout(60)

_MIB = 1024 * 1024


class Echo:
    async def process(self, channel: Channel, request: RemotingCommand) -> RemotingCommand | None:
        return request.make_response(0, body=request.body[:16])


def _start(**kwargs: float | int) -> ServerThread:
    srv = RemotingServer(name="limits", **kwargs)  # type: ignore[arg-type]
    srv.register_default_processor(Echo())
    st = ServerThread(srv)
    st.start()
    return st


@pytest.fixture
def small_budget() -> Iterator[ServerThread]:
    st = _start(max_frame_length=_MIB, max_pending_frame_bytes=2 * _MIB)
    try:
        yield st
    finally:
        st.stop()


def _connect(st: ServerThread) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", st.port), timeout=10)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def _closed_by_peer(sock: socket.socket, timeout_s: float) -> bool:
    sock.settimeout(timeout_s)
    try:
        while True:
            if not sock.recv(65536):
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False


def _round_trip(st: ServerThread, body: bytes = b"ping") -> RemotingCommand:
    with _connect(st) as sock:
        sock.sendall(RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, None, body).encode())
        decoder = FrameDecoder()
        while True:
            data = sock.recv(65536)
            assert data, "closed"
            frames = decoder.feed(data)
            if frames:
                return frames[0]


def test_a_trickling_frame_is_closed_after_the_read_timeout() -> None:
    st = _start(frame_read_timeout_s=0.5, idle_timeout_s=120)
    try:
        frame = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, None, b"x" * 100).encode()
        with _connect(st) as slow:
            t0 = time.monotonic()
            closed = False
            for i in range(40):  # one byte every 100 ms: active, never idle, never complete
                try:
                    slow.sendall(frame[i : i + 1])
                except (BrokenPipeError, ConnectionResetError):
                    closed = True
                    break
                if _closed_by_peer(slow, 0.1):
                    closed = True
                    break
            elapsed = time.monotonic() - t0
            assert closed, "a frame trickling in for 4 s was not cut off"
            assert 0.4 < elapsed < 3.0
        # a frame that completes in time is answered, and the server serves others meanwhile
        with _connect(st) as steady:
            steady.sendall(frame[:10])
            time.sleep(0.2)
            steady.sendall(frame[10:])
            assert not _closed_by_peer(steady, 0.2)
        assert _round_trip(st).code == 0
    finally:
        st.stop()


def test_large_unfinished_frames_share_one_budget(small_budget: ServerThread) -> None:
    st = small_budget
    srv = st.server
    size = 900 * 1024  # >= LARGE_FRAME: reserves its announced length
    assert size >= LARGE_FRAME
    head = struct.pack(">i", size - 4) + b"\x00" * 1000

    def pending() -> int:
        return st.call(lambda: srv.pending_frame_bytes)

    first, second = _connect(st), _connect(st)
    try:
        first.sendall(head)
        second.sendall(head)
        wait_until(lambda: pending() == 2 * size, 5, "two reservations")
        with _connect(st) as third:  # 2.7 MiB would not fit the 2 MiB budget
            third.sendall(head)
            assert _closed_by_peer(third, 5)
        assert pending() == 2 * size
        assert _round_trip(st).code == 0  # small frames are not held back
        first.close()  # its reservation comes back ...
        wait_until(lambda: pending() == size, 5, "a released reservation")
        with _connect(st) as fourth:  # ... and a new large frame fits again
            fourth.sendall(head)
            wait_until(lambda: pending() == 2 * size, 5, "a new reservation")
            assert not _closed_by_peer(fourth, 0.2)
    finally:
        first.close()
        second.close()
    wait_until(lambda: pending() == 0, 5, "every reservation released")


def _rss_bytes() -> int:
    with open(f"/proc/{os.getpid()}/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_rss_stays_under_the_budget_when_many_peers_send_large_frames() -> None:
    # 30 peers each send 3.9 MiB of a 4 MiB frame. Unbounded that is ~117 MiB of heap;
    # with an 8 MiB budget two frames are held and the rest are refused, so the growth
    # stays under budget + peers x (LARGE_FRAME + a 256 KiB read chunk) + slack.
    st = _start(max_frame_length=4 * _MIB, max_pending_frame_bytes=8 * _MIB)
    payload = struct.pack(">i", 4 * _MIB - 4) + b"\x00" * (4 * _MIB - 100 * 1024)
    socks: list[socket.socket] = []
    try:
        before = _rss_bytes()
        for _ in range(30):
            sock = _connect(st)
            sock.settimeout(10)
            socks.append(sock)
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                sock.sendall(payload)  # refused while sending: what the budget is for
        grown = _rss_bytes() - before
        bound = 8 * _MIB + 30 * (LARGE_FRAME + 256 * 1024) + 24 * _MIB
        assert grown < bound, f"RSS grew {grown / _MIB:.1f} MiB, bound {bound / _MIB:.1f} MiB"
        assert st.call(lambda: st.server.pending_frame_bytes) <= 8 * _MIB
    finally:
        for sock in socks:
            sock.close()
        st.stop()


def test_malformed_frames_log_one_warning_line_without_traceback(
    small_budget: ServerThread, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="rocketq.remoting.server")
    for header in (b'{"code":1e999}', b'{"code":Infinity}', b"[" * 50_000 + b"]" * 50_000) * 10:
        with _connect(small_budget) as sock:
            sock.sendall(struct.pack(">iI", 4 + len(header), len(header)) + header)
            assert _closed_by_peer(sock, 5)
    assert _round_trip(small_budget).code == 0
    lines = [r for r in caplog.records if "malformed frame" in r.getMessage()]
    assert len(lines) == 1  # 30 refusals from one host within 10 s: one line
    assert all(r.exc_info is None for r in caplog.records)
    assert small_budget.server.log_limiter.suppressed_total >= 29
