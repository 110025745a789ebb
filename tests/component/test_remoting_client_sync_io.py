"""RemotingClient's sync calls read their own responses (leader/follower), on real sockets.

A thread in ``invoke_sync`` reads the connection itself while it holds the connection's read
role, completes the other callers' calls it reads, and hands the role on when its own answer
arrived; the I/O thread keeps async completions, server requests and idle connections. Every
scenario here is driven by a scripted peer on 127.0.0.1 (or our own server), so the order of
the answers on the wire is fixed by the test, not by luck; each runs on epoll and on the
portable :mod:`selectors` poller (select()).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import random
import selectors
import socket
import struct
import threading
import time
from collections.abc import Iterator

import pytest

from rocketq.errors import ConnectError, RequestTimeoutError
from rocketq.protocol.codes import RequestCode
from rocketq.protocol.frame import FLAG_RESPONSE, FrameDecoder, RemotingCommand
from rocketq.remoting import client as remoting_client
from rocketq.remoting.client import IO_THREAD_NAME, RemotingClient
from rocketq.remoting.poller import Poller
from rocketq.remoting.server import Channel, RemotingServer, ServerThread
from rocketq.testing.waits import wait_until
from tests.component.test_remoting_client import RawPeer, _req, read_frames, wait_eof

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(params=["epoll", "select"])
def client(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[RemotingClient]:
    """A started client on the platform's poller (epoll), and on the portable fallback over
    select(), which (unlike epoll) needs the I/O thread woken to see a change made by a
    sync caller."""
    if request.param == "select":
        monkeypatch.setattr(remoting_client, "new_poller", lambda: Poller(selectors.SelectSelector()))
    c = RemotingClient(name="syncio")
    c.start()
    try:
        # the process's I/O thread was made by this start (no other client is left open)
        assert c._reactor is not None and c._reactor.shared is (request.param == "epoll")
        yield c
    finally:
        c.close()
    assert not [t for t in threading.enumerate() if t.name.startswith("syncio-")]


def _answer(req: RemotingCommand, body: bytes | None = None) -> bytes:
    return req.make_response(0, body=b"re:" + req.body if body is None else body).encode()


def _call_in_thread(
    client: RemotingClient, addr: str, n: int, timeout_ms: int
) -> concurrent.futures.Future[RemotingCommand]:
    """``invoke_sync`` on a thread of its own; the future holds its outcome."""
    fut: concurrent.futures.Future[RemotingCommand] = concurrent.futures.Future()

    def run() -> None:
        try:
            fut.set_result(client.invoke_sync(addr, _req(n), timeout_ms))
        except BaseException as exc:
            fut.set_exception(exc)

    threading.Thread(target=run, name=f"caller-{n}", daemon=True).start()
    return fut


class _DelayedEcho:
    """Echoes after a random pause of up to ``max_s``: concurrent calls are answered out of
    order, and calls with a timeout of a few ms time out now and then."""

    def __init__(self, max_s: float) -> None:
        self.max_s = max_s

    async def process(self, channel: Channel, request: RemotingCommand) -> RemotingCommand | None:
        await asyncio.sleep(random.random() * self.max_s)
        return request.make_response(0, ext_fields=request.ext_fields, body=request.body)


# ---------------------------------------------------------------------- many callers, one socket
def test_many_sync_threads_and_async_calls_on_one_connection_get_their_own_answers(
    client: RemotingClient,
) -> None:
    server = RemotingServer(name="jitter")
    server.register_default_processor(_DelayedEcho(0.003))
    st = ServerThread(server)
    st.start()
    addr = f"127.0.0.1:{st.port}"
    errors: list[str] = []
    try:

        def sync_worker(t: int) -> None:
            for i in range(40):
                n = t * 1000 + i
                resp = client.invoke_sync(addr, _req(n), 10_000)
                if resp.body != f"body-{n}".encode():
                    errors.append(f"sync {n}: {resp.body!r}")

        def async_worker() -> None:
            futs = [(n, client.invoke_async(addr, _req(n), 10_000)) for n in range(90_000, 90_200)]
            for n, fut in futs:
                if fut.result(20).body != f"body-{n}".encode():
                    errors.append(f"async {n}")

        started = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(9) as pool:
            jobs = [pool.submit(sync_worker, t) for t in range(8)] + [pool.submit(async_worker)]
            for job in jobs:
                job.result(30)
        assert time.monotonic() - started < 10  # nobody waited for a timeout
        assert errors == []
        assert client.is_connected(addr)
    finally:
        st.stop()


def test_out_of_order_answers_to_concurrent_sync_callers(client: RemotingClient) -> None:
    def script(sock: socket.socket, dec: FrameDecoder) -> None:
        reqs = read_frames(sock, dec, 6)
        for req in reversed(reqs):  # the last caller's answer first
            sock.sendall(_answer(req))
        wait_eof(sock)

    peer = RawPeer(script)
    futs = [_call_in_thread(client, peer.addr, n, 10_000) for n in range(6)]
    assert sorted(f.result(5).body for f in futs) == sorted(f"re:body-{n}".encode() for n in range(6))
    client.close_connection(peer.addr)
    peer.join()


def test_a_reader_whose_answer_came_hands_the_role_on(client: RemotingClient) -> None:
    """A reads; B, C, D wait behind it. A's answer comes first and A returns: the others'
    answers, sent only after that, must still be read (by one of them) long before their
    10 s timeout, and afterwards the I/O thread reads the idle connection again."""
    first_returned = threading.Event()
    seen_first = threading.Event()

    def script(sock: socket.socket, dec: FrameDecoder) -> None:
        (first,) = read_frames(sock, dec, 1)
        seen_first.set()
        rest = read_frames(sock, dec, 3)
        sock.sendall(_answer(first))
        assert first_returned.wait(5)
        for req in reversed(rest):
            time.sleep(0.05)
            sock.sendall(_answer(req))
        (late,) = read_frames(sock, dec, 1)  # an async call: only the I/O thread can read it now
        sock.sendall(_answer(late))
        wait_eof(sock)

    peer = RawPeer(script)
    a = _call_in_thread(client, peer.addr, 0, 10_000)
    assert seen_first.wait(5)
    others = [_call_in_thread(client, peer.addr, n, 10_000) for n in (1, 2, 3)]
    assert a.result(5).body == b"re:body-0"
    started = time.monotonic()
    first_returned.set()
    assert [f.result(5).body for f in others] == [b"re:body-1", b"re:body-2", b"re:body-3"]
    assert time.monotonic() - started < 3
    assert client.invoke_async(peer.addr, _req(4), 5000).result(5).body == b"re:body-4"
    client.close_connection(peer.addr)
    peer.join()


# ---------------------------------------------------------------------- what the I/O thread keeps
def test_sync_calls_complete_while_the_io_thread_is_stuck(client: RemotingClient) -> None:
    """The sync path needs no I/O thread: with it blocked in a (misbehaving) async
    done-callback, a sync call on the same connection still gets its answer."""
    armed = threading.Event()
    callback_started = threading.Event()
    release = threading.Event()
    callback_thread: list[str] = []

    def script(sock: socket.socket, dec: FrameDecoder) -> None:
        (async_req,) = read_frames(sock, dec, 1)
        assert armed.wait(5)
        sock.sendall(_answer(async_req))
        (sync_req,) = read_frames(sock, dec, 1)
        sock.sendall(_answer(sync_req))
        wait_eof(sock)

    def blocker(_: concurrent.futures.Future[RemotingCommand]) -> None:
        callback_thread.append(threading.current_thread().name)
        callback_started.set()
        release.wait(10)

    peer = RawPeer(script)
    fut = client.invoke_async(peer.addr, _req(1), 10_000)
    fut.add_done_callback(blocker)
    armed.set()
    try:
        assert callback_started.wait(5)
        assert callback_thread == [IO_THREAD_NAME]  # the documented home of async callbacks
        assert client.invoke_sync(peer.addr, _req(2), 3000).body == b"re:body-2"
    finally:
        release.set()
    client.close_connection(peer.addr)
    peer.join()


def test_async_answers_read_by_a_sync_caller_complete_on_the_io_thread(client: RemotingClient) -> None:
    seen_sync = threading.Event()
    armed = threading.Event()
    callback_ran = threading.Event()
    callback_thread: list[str] = []

    def script(sock: socket.socket, dec: FrameDecoder) -> None:
        (sync_req,) = read_frames(sock, dec, 1)
        seen_sync.set()
        (async_req,) = read_frames(sock, dec, 1)
        assert armed.wait(5)
        sock.sendall(_answer(async_req))  # the sync caller is the one reading now
        assert callback_ran.wait(5)
        sock.sendall(_answer(sync_req))
        wait_eof(sock)

    def on_done(_: concurrent.futures.Future[RemotingCommand]) -> None:
        callback_thread.append(threading.current_thread().name)
        callback_ran.set()

    peer = RawPeer(script)
    sync_call = _call_in_thread(client, peer.addr, 1, 10_000)
    assert seen_sync.wait(5)
    fut = client.invoke_async(peer.addr, _req(2), 10_000)
    fut.add_done_callback(on_done)
    armed.set()
    assert fut.result(5).body == b"re:body-2"
    assert sync_call.result(5).body == b"re:body-1"
    assert callback_thread == [IO_THREAD_NAME]
    client.close_connection(peer.addr)
    peer.join()


def test_a_server_request_arriving_while_a_sync_caller_reads_is_answered() -> None:
    handled_on: list[str] = []

    def handler(request: RemotingCommand, addr: str) -> RemotingCommand | None:
        handled_on.append(threading.current_thread().name)
        return RemotingCommand(code=0, body=b"running-info")

    def script(sock: socket.socket, dec: FrameDecoder) -> None:
        (sync_req,) = read_frames(sock, dec, 1)
        ask = RemotingCommand(code=RequestCode.GET_CONSUMER_RUNNING_INFO, opaque=77)
        sock.sendall(ask.encode())
        (answer,) = read_frames(sock, dec, 1)
        assert (answer.opaque, answer.flag & FLAG_RESPONSE, answer.body) == (
            77,
            FLAG_RESPONSE,
            b"running-info",
        )
        sock.sendall(_answer(sync_req))
        wait_eof(sock)

    peer = RawPeer(script)
    c = RemotingClient(name="asked", request_handler=handler)
    c.start()
    try:
        assert c.invoke_sync(peer.addr, _req(1), 5000).body == b"re:body-1"
        c.close_connection(peer.addr)
        peer.join()
    finally:
        c.close()
    assert [name.rsplit("_", 1)[0] for name in handled_on] == ["asked-handler"]


def test_a_stream_of_sync_calls_leaves_the_poller_alone(client: RemotingClient) -> None:
    """The read role is parked between sync calls: the calling thread changes the poller only
    to register the connection and for its first claim (two per call before), plus one claim
    after each time the I/O thread took an idle parked role back (a slow machine)."""
    changes: list[tuple[str, int, int]] = []
    assert client._reactor is not None
    poller = client._reactor.poller
    real_set = poller.set

    def counting_set(fd: int, old: int, new: int, data: object) -> None:
        changes.append((threading.current_thread().name, old, new))
        real_set(fd, old, new, data)  # type: ignore[arg-type]

    poller.set = counting_set  # type: ignore[method-assign]

    def script(sock: socket.socket, dec: FrameDecoder) -> None:
        for _ in range(50):
            (req,) = read_frames(sock, dec, 1)
            sock.sendall(_answer(req))
        wait_eof(sock)

    peer = RawPeer(script)
    for n in range(50):
        assert client.invoke_sync(peer.addr, _req(n), 5000).body == f"re:body-{n}".encode()
    by_caller = [c for c in changes if c[0] == threading.current_thread().name]
    by_io = [c for c in changes if c[0] == IO_THREAD_NAME]
    assert len(by_caller) <= 2 + len(by_io), changes
    assert len(by_caller) + len(by_io) == len(changes), changes
    wait_until(lambda: client._conns[peer.addr].reader is None, 5, "the parked role handed back")
    client.close_connection(peer.addr)
    peer.join()


def test_a_server_request_after_a_sync_call_is_read_by_the_io_thread() -> None:
    """Nobody calls after the sync call: its parked read role goes back to the poller within
    a few ms, so the server's request is read and answered."""

    def handler(request: RemotingCommand, addr: str) -> RemotingCommand | None:
        return RemotingCommand(code=0, body=b"running-info")

    asked_at: list[float] = []

    def script(sock: socket.socket, dec: FrameDecoder) -> None:
        (sync_req,) = read_frames(sock, dec, 1)
        sock.sendall(_answer(sync_req))
        time.sleep(0.001)  # the caller has the answer and leaves the role (not an assertion)
        asked_at.append(time.monotonic())
        sock.sendall(RemotingCommand(code=RequestCode.GET_CONSUMER_RUNNING_INFO, opaque=77).encode())
        (answer,) = read_frames(sock, dec, 1)
        asked_at.append(time.monotonic())
        assert (answer.opaque, answer.body) == (77, b"running-info")
        wait_eof(sock)

    peer = RawPeer(script)
    c = RemotingClient(name="parked", request_handler=handler)
    c.start()
    try:
        assert c.invoke_sync(peer.addr, _req(1), 5000).body == b"re:body-1"
        wait_until(lambda: len(asked_at) == 2, 5, "the server request answered")
        assert asked_at[1] - asked_at[0] < 1.0
        c.close_connection(peer.addr)
        peer.join()
    finally:
        c.close()


def test_a_peer_closing_after_a_sync_call_is_noticed(client: RemotingClient) -> None:
    def script(sock: socket.socket, dec: FrameDecoder) -> None:
        (req,) = read_frames(sock, dec, 1)
        sock.sendall(_answer(req))

    peer = RawPeer(script)
    assert client.invoke_sync(peer.addr, _req(1), 5000).body == b"re:body-1"
    peer.join()  # the peer closed its end
    wait_until(lambda: not client.is_connected(peer.addr), 5, "the lost connection noticed")


# ---------------------------------------------------------------------- timeouts and failures
def test_reader_and_follower_time_out_and_the_connection_keeps_working(client: RemotingClient) -> None:
    seen_first = threading.Event()

    def script(sock: socket.socket, dec: FrameDecoder) -> None:
        (first,) = read_frames(sock, dec, 1)
        seen_first.set()
        (second,) = read_frames(sock, dec, 1)
        (third,) = read_frames(sock, dec, 1)  # sent after both timed out
        # the late answers come first: dropped as unknown opaques
        sock.sendall(_answer(first) + _answer(second) + _answer(third))
        (fourth,) = read_frames(sock, dec, 1)
        sock.sendall(_answer(fourth))
        wait_eof(sock)

    peer = RawPeer(script)
    started = time.monotonic()
    reader = _call_in_thread(client, peer.addr, 1, 300)
    assert seen_first.wait(5)
    follower = _call_in_thread(client, peer.addr, 2, 300)
    for call in (reader, follower):
        with pytest.raises(RequestTimeoutError):
            call.result(5)
    assert 0.25 <= time.monotonic() - started < 3
    assert client.invoke_sync(peer.addr, _req(3), 5000).body == b"re:body-3"
    # and the I/O thread got the role back
    assert client.invoke_async(peer.addr, _req(4), 5000).result(5).body == b"re:body-4"
    client.close_connection(peer.addr)
    peer.join()


def test_a_reset_while_callers_read_fails_every_pending_call_once(client: RemotingClient) -> None:
    def script(sock: socket.socket, dec: FrameDecoder) -> None:
        read_frames(sock, dec, 5)
        # SO_LINGER 0: close() sends a RST
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    peer = RawPeer(script)
    started = time.monotonic()
    syncs = [_call_in_thread(client, peer.addr, n, 20_000) for n in range(4)]
    fut = client.invoke_async(peer.addr, _req(9), 20_000)
    outcomes = []
    for call in [*syncs, fut]:
        with pytest.raises(ConnectError):
            call.result(5)
        outcomes.append(call.exception())
    assert len({id(exc) for exc in outcomes}) == 5  # one error per call
    assert time.monotonic() - started < 5
    assert not client.is_connected(peer.addr)
    peer.join()


def test_close_with_sync_callers_waiting_fails_them_and_leaves_no_thread() -> None:
    seen = threading.Event()

    def script(sock: socket.socket, dec: FrameDecoder) -> None:
        read_frames(sock, dec, 3)
        seen.set()
        wait_eof(sock)  # never answers

    peer = RawPeer(script)
    c = RemotingClient(name="closing")
    c.start()
    calls = [_call_in_thread(c, peer.addr, n, 30_000) for n in range(3)]
    assert seen.wait(5)
    started = time.monotonic()
    c.close()
    for call in calls:
        with pytest.raises(ConnectError):
            call.result(5)
    assert time.monotonic() - started < 5
    peer.join()
    assert not [t for t in threading.enumerate() if t.name.startswith("closing-")]


def test_stress_timeouts_and_dropped_connections_never_cross_answers_or_hang(client: RemotingClient) -> None:
    """Sync callers with short timeouts, async calls and connection drops racing: every
    call ends with its own answer, a timeout or a ConnectError, and never overstays its
    timeout by much (a lost read role would strand callers until their deadline)."""
    server = RemotingServer(name="sometimes")
    server.register_default_processor(_DelayedEcho(0.008))
    st = ServerThread(server)
    st.start()
    addr = f"127.0.0.1:{st.port}"
    errors: list[str] = []
    outcomes = {"ok": 0, "timeout": 0, "lost": 0}
    stop = threading.Event()
    try:

        def sync_worker(t: int) -> None:
            rnd = random.Random(t)
            for i in range(300):
                n = t * 1000 + i
                timeout_ms = rnd.choice((3, 6, 50, 2000))
                started = time.monotonic()
                try:
                    body = client.invoke_sync(addr, _req(n), timeout_ms).body
                except RequestTimeoutError:
                    outcomes["timeout"] += 1
                except ConnectError:
                    outcomes["lost"] += 1
                else:
                    outcomes["ok"] += 1
                    if body != f"body-{n}".encode():
                        errors.append(f"{n} got {body!r}")
                overstay = time.monotonic() - started - timeout_ms / 1000
                if overstay > 1.0:
                    errors.append(f"{n} overstayed its {timeout_ms} ms timeout by {overstay:.2f} s")

        def async_worker() -> None:
            while not stop.is_set():
                futs = [(n, client.invoke_async(addr, _req(n), 50)) for n in range(50_000, 50_020)]
                for n, fut in futs:
                    try:
                        body = fut.result(5).body
                    except (RequestTimeoutError, ConnectError):
                        continue
                    if body != f"body-{n}".encode():
                        errors.append(f"async {n} got {body!r}")

        def dropper() -> None:
            while not stop.wait(0.15):
                client.close_connection(addr)

        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            side = [pool.submit(async_worker), pool.submit(dropper)]
            workers = [pool.submit(sync_worker, t) for t in range(6)]
            for job in workers:
                job.result(60)
            stop.set()
            for job in side:
                job.result(10)
        assert errors == []
        assert outcomes["ok"] > 0 and outcomes["timeout"] > 0
        # the connection still serves a plain call afterwards
        assert client.invoke_sync(addr, _req(7), 5000).body == b"body-7"
    finally:
        stop.set()
        st.stop()


# ---------------------------------------------------------------------- pre-encoded frames
def test_a_pre_encoded_frame_gets_its_answer_and_times_out_naming_its_code(client: RemotingClient) -> None:
    """invoke_sync_frame: the caller's frame goes out as it is (its opaque from next_opaque),
    its answer comes back as with invoke_sync; an unanswered one times out naming its code."""

    def script(sock: socket.socket, dec: FrameDecoder) -> None:
        (first,) = read_frames(sock, dec, 1)
        sock.sendall(_answer(first))
        read_frames(sock, dec, 1)  # never answered
        wait_eof(sock)

    peer = RawPeer(script)
    assert client.signs_requests is False
    opaque = client.next_opaque()
    request = _req(1)
    request.opaque = opaque
    response = client.invoke_sync_frame(peer.addr, request.encode(), opaque, request.code, 5000)
    assert (response.opaque, response.body) == (opaque, b"re:body-1")
    second = client.next_opaque()
    assert second != opaque
    unanswered = _req(2)
    unanswered.opaque = second
    with pytest.raises(RequestTimeoutError, match=f"code 4321, opaque {second}"):
        client.invoke_sync_frame(peer.addr, unanswered.encode(), second, 4321, 200)
    client.close_connection(peer.addr)
    peer.join()


def test_a_client_with_an_rpc_hook_signs_requests() -> None:
    client = RemotingClient(name="signed", rpc_hook=lambda request: None)
    assert client.signs_requests is True
