"""RemotingClient against real sockets on 127.0.0.1: our asyncio server and scripted raw peers.

Also covers ServiceThread (the base of the client's background loops).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import socket
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from rocketq.common.service_thread import ServiceThread
from rocketq.errors import (
    ClientError,
    ConnectError,
    IllegalArgumentError,
    MalformedFrameError,
    RequestTimeoutError,
)
from rocketq.protocol.codes import RequestCode, ResponseCode, SerializeType
from rocketq.protocol.frame import FLAG_ONEWAY, FLAG_RESPONSE, FrameDecoder, RemotingCommand, decode_frame
from rocketq.remoting.client import IO_THREAD_NAME, RemotingClient
from rocketq.remoting.helper import RequestIdCounter, parse_addr
from rocketq.remoting.server import Channel, RemotingServer, RequestProcessor, ServerThread
from tests.conftest import load_golden_frames

pytestmark = pytest.mark.timeout(60)

JSON = SerializeType.JSON
BINARY = SerializeType.ROCKETMQ


# ---------------------------------------------------------------------- helpers
class Echo:
    """Answers every request with its own ext fields and body; remembers what it saw."""

    def __init__(self) -> None:
        self.seen: list[RemotingCommand] = []
        self.channels: list[Channel] = []

    async def process(self, channel: Channel, request: RemotingCommand) -> RemotingCommand | None:
        self.seen.append(request)
        self.channels.append(channel)
        return request.make_response(0, ext_fields=request.ext_fields, body=request.body)


class Hold:
    """Never answers (a held long poll)."""

    def __init__(self) -> None:
        self.received = threading.Event()
        self.count = 0

    async def process(self, channel: Channel, request: RemotingCommand) -> RemotingCommand | None:
        self.count += 1
        self.received.set()
        return None


def _start_server(
    port: int = 0, processors: dict[int, RequestProcessor] | None = None
) -> tuple[ServerThread, Echo]:
    server = RemotingServer(port=port, name="test-server")
    echo = Echo()
    server.register_default_processor(echo)
    for code, proc in (processors or {}).items():
        server.register_processor(code, proc)
    st = ServerThread(server)
    st.start()
    return st, echo


@pytest.fixture
def echo_server() -> Iterator[tuple[str, Echo, ServerThread]]:
    st, echo = _start_server()
    try:
        yield f"127.0.0.1:{st.port}", echo, st
    finally:
        st.stop()


@pytest.fixture
def client() -> Iterator[RemotingClient]:
    c = RemotingClient(name="tclient")
    c.start()
    try:
        yield c
    finally:
        c.close()
    assert not [t for t in threading.enumerate() if t.name.startswith("tclient-")]


def _req(n: int, serialize_type: int = JSON, code: int = RequestCode.SEND_MESSAGE_V2) -> RemotingCommand:
    return RemotingCommand.request(code, {"n": str(n)}, f"body-{n}".encode(), serialize_type=serialize_type)


class RawPeer:
    """A scripted server: accepts one connection and runs ``script(sock, decoder)`` in a thread."""

    def __init__(self, script: Callable[[socket.socket, FrameDecoder], None]) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(10)
        self.addr = f"127.0.0.1:{self._listener.getsockname()[1]}"
        self.error: BaseException | None = None
        self._script = script
        self._thread = threading.Thread(target=self._run, name="raw-peer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            conn, _ = self._listener.accept()
            with conn:
                conn.settimeout(10)
                self._script(conn, FrameDecoder())
        except BaseException as exc:
            self.error = exc

    def join(self) -> None:
        self._thread.join(10)
        self._listener.close()
        assert not self._thread.is_alive()
        if self.error is not None:
            raise self.error


def read_frames(sock: socket.socket, decoder: FrameDecoder, n: int) -> list[RemotingCommand]:
    out: list[RemotingCommand] = []
    while len(out) < n:
        data = sock.recv(1 << 20)
        if not data:
            raise EOFError("peer closed")
        out += decoder.feed(data)
    return out


def wait_eof(sock: socket.socket) -> None:
    while sock.recv(65536):
        pass


# ---------------------------------------------------------------------- round trips
@pytest.mark.parametrize("stype", [JSON, BINARY], ids=["json", "rocketmq"])
def test_sync_round_trip_in_both_serialize_types(
    client: RemotingClient, echo_server: tuple[str, Echo, ServerThread], stype: int
) -> None:
    addr, echo, _ = echo_server
    resp = client.invoke_sync(addr, _req(7, stype), 3000)
    assert resp.is_response
    assert resp.code == ResponseCode.SUCCESS
    assert resp.body == b"body-7"
    assert resp.ext_fields == {"n": "7"}
    assert resp.serialize_type == stype
    assert echo.seen[-1].serialize_type == stype
    assert resp.opaque == echo.seen[-1].opaque


def test_async_round_trips_and_opaques_are_distinct(
    client: RemotingClient, echo_server: tuple[str, Echo, ServerThread]
) -> None:
    addr, echo, _ = echo_server
    futs = [client.invoke_async(addr, _req(i, BINARY if i % 2 else JSON), 5000) for i in range(500)]
    for i, fut in enumerate(futs):
        assert fut.result(10).body == f"body-{i}".encode()
    assert len({r.opaque for r in echo.seen}) == 500
    assert client.is_connected(addr)
    assert len({id(c) for c in echo.channels}) == 1  # one connection per address


def test_concurrent_invoke_sync_from_8_threads(
    client: RemotingClient, echo_server: tuple[str, Echo, ServerThread]
) -> None:
    addr, _, _ = echo_server
    errors: list[str] = []

    def work(t: int) -> None:
        for i in range(150):
            n = t * 1000 + i
            resp = client.invoke_sync(addr, _req(n), 5000)
            if resp.body != f"body-{n}".encode():
                errors.append(f"{n}: {resp.body!r}")

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        for f in [pool.submit(work, t) for t in range(8)]:
            f.result(30)
    assert errors == []


def test_large_8mib_bodies_both_ways(
    client: RemotingClient, echo_server: tuple[str, Echo, ServerThread]
) -> None:
    addr, _, _ = echo_server
    body = bytes(range(256)) * (8 * 1024 * 1024 // 256)
    req = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, {"k": "v"}, body)
    futs = [client.invoke_async(addr, req if i == 0 else _req(i), 10000) for i in range(3)]
    assert futs[0].result(20).body == body
    assert futs[2].result(20).body == b"body-2"
    assert client.invoke_sync(addr, _req(9, BINARY), 3000).body == b"body-9"


def test_out_of_order_responses_and_unknown_opaque_are_matched_by_opaque(client: RemotingClient) -> None:
    def script(sock: socket.socket, dec: FrameDecoder) -> None:
        reqs = read_frames(sock, dec, 3)
        # an answer nobody waits for first: dropped silently (processResponseCommand)
        stray = RemotingCommand(code=0, flag=FLAG_RESPONSE, opaque=987654, body=b"stray")
        out = stray.encode()
        for r in reversed(reqs):
            out += r.make_response(0, body=b"re:" + r.body).encode()
        sock.sendall(out)
        wait_eof(sock)

    peer = RawPeer(script)
    futs = [client.invoke_async(peer.addr, _req(i), 5000) for i in range(3)]
    assert [f.result(5).body for f in futs] == [b"re:body-0", b"re:body-1", b"re:body-2"]
    assert client.is_connected(peer.addr)
    client.close_connection(peer.addr)
    peer.join()


def test_json_response_to_a_binary_request_is_accepted(client: RemotingClient) -> None:
    # binary_header.jsonl seq 29: the broker's hold service resumes a ROCKETMQ client's
    # long poll with a JSON header. Replay that very frame (opaque patched to ours).
    golden = next(f for f in load_golden_frames("binary_header.jsonl") if f.seq == 29)
    assert golden.serialize_type == "JSON" and golden.is_response

    def script(sock: socket.socket, dec: FrameDecoder) -> None:
        (req,) = read_frames(sock, dec, 1)
        assert req.serialize_type == BINARY
        resp = decode_frame(golden.frame)
        resp.opaque = req.opaque
        sock.sendall(resp.encode())
        wait_eof(sock)

    peer = RawPeer(script)
    resp = client.invoke_sync(peer.addr, _req(1, BINARY, RequestCode.PULL_MESSAGE), 3000)
    assert resp.serialize_type == JSON
    assert (resp.code, resp.body or None) == (golden.code, golden.body)
    client.close_connection(peer.addr)
    peer.join()


# ---------------------------------------------------------------------- timeouts and failures
def test_sync_and_async_timeouts(client: RemotingClient) -> None:
    got: list[RemotingCommand] = []

    def script(sock: socket.socket, dec: FrameDecoder) -> None:
        reqs = read_frames(sock, dec, 2)
        time.sleep(0.5)  # answer both late: the client must drop them silently
        sock.sendall(b"".join(r.make_response(0).encode() for r in reqs))
        (ok,) = read_frames(sock, dec, 1)
        got.append(ok)
        sock.sendall(ok.make_response(0, body=b"fine").encode())
        wait_eof(sock)

    peer = RawPeer(script)
    fut = client.invoke_async(peer.addr, _req(1), 150)
    t0 = time.monotonic()
    with pytest.raises(RequestTimeoutError) as info:
        client.invoke_sync(peer.addr, _req(2), 150)
    elapsed = time.monotonic() - t0
    assert 0.1 <= elapsed < 1.0
    assert info.value.addr == peer.addr and info.value.retriable
    with pytest.raises(RequestTimeoutError):
        fut.result(2)
    time.sleep(0.6)
    # the late answers were dropped; the connection still works
    assert client.invoke_sync(peer.addr, _req(3), 3000).body == b"fine"
    client.close_connection(peer.addr)
    peer.join()
    assert got[0].ext_fields == {"n": "3"}


def test_a_framed_async_call_is_answered_or_fails_exactly_once(client: RemotingClient) -> None:
    """invoke_async_callback_frame (the push consumer's pulls): the caller's frame goes out as
    it is with its opaque; its callback gets the answer, a timeout or the lost connection, once."""
    seen: list[RemotingCommand] = []

    def script(sock: socket.socket, dec: FrameDecoder) -> None:
        first, _late, _lost = read_frames(sock, dec, 3)
        seen.append(first)
        sock.sendall(first.make_response(0, body=b"answered").encode())
        time.sleep(0.5)  # the second never answered (timeout); then the connection goes (lost)

    calls: dict[int, list[tuple[RemotingCommand | None, BaseException | None]]] = {1: [], 2: [], 3: []}
    done = threading.Event()

    def callback_of(n: int) -> Callable[[RemotingCommand | None, BaseException | None], None]:
        def callback(response: RemotingCommand | None, error: BaseException | None) -> None:
            calls[n].append((response, error))
            if all(calls.values()):
                done.set()

        return callback

    peer = RawPeer(script)
    frames = []
    for n, timeout_ms in ((1, 5000), (2, 150), (3, 20000)):
        request = _req(n)
        request.opaque = client.next_opaque()
        frames.append(request)
        client.invoke_async_callback_frame(
            peer.addr, request.encode(), request.opaque, timeout_ms, callback_of(n)
        )
    assert done.wait(10)
    peer.join()
    assert seen[0].opaque == frames[0].opaque and seen[0].ext_fields == {"n": "1"}
    time.sleep(0.2)
    (answered,), (timed_out,), (lost,) = calls[1], calls[2], calls[3]  # each exactly once
    assert answered[0] is not None and answered[0].body == b"answered" and answered[1] is None
    assert timed_out[0] is None and isinstance(timed_out[1], RequestTimeoutError)
    assert lost[0] is None and isinstance(lost[1], ConnectError)


def test_lost_connection_fails_pending_calls_at_once(client: RemotingClient) -> None:
    def script(sock: socket.socket, dec: FrameDecoder) -> None:
        read_frames(sock, dec, 2)

    peer = RawPeer(script)  # closes the connection after reading both requests
    fut = client.invoke_async(peer.addr, _req(1), 20000)
    t0 = time.monotonic()
    with pytest.raises(ConnectError):
        client.invoke_sync(peer.addr, _req(2), 20000)
    with pytest.raises(ConnectError):
        fut.result(5)
    assert time.monotonic() - t0 < 5
    assert not client.is_connected(peer.addr)
    peer.join()


def test_malformed_frame_from_server_closes_connection_with_protocol_cause(client: RemotingClient) -> None:
    def script(sock: socket.socket, dec: FrameDecoder) -> None:
        read_frames(sock, dec, 1)
        sock.sendall(b"\x00\x00\x00\x08\x07\x00\x00\x00garbage!")  # serialize type 7
        wait_eof(sock)

    peer = RawPeer(script)
    with pytest.raises(ConnectError) as info:
        client.invoke_sync(peer.addr, _req(1), 5000)
    assert isinstance(info.value.__cause__, MalformedFrameError)
    assert not client.is_connected(peer.addr)
    peer.join()


def test_connect_refused_is_connect_error(client: RemotingClient) -> None:
    with socket.create_server(("127.0.0.1", 0)) as s:
        port = s.getsockname()[1]
    with pytest.raises(ConnectError):
        client.invoke_sync(f"127.0.0.1:{port}", _req(1), 3000)
    with pytest.raises(ConnectError):
        client.invoke_async(f"127.0.0.1:{port}", _req(1), 3000)
    with pytest.raises(IllegalArgumentError):
        client.invoke_sync("no-port-here", _req(1), 3000)


def test_reconnect_after_server_restart_on_same_port(client: RemotingClient) -> None:
    st, _ = _start_server()
    port = st.port
    addr = f"127.0.0.1:{port}"
    try:
        assert client.invoke_sync(addr, _req(1), 3000).body == b"body-1"
    finally:
        st.stop()
    deadline = time.monotonic() + 5
    while client.is_connected(addr) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not client.is_connected(addr)
    with pytest.raises(ConnectError):
        client.invoke_sync(addr, _req(2), 3000)
    st2, _ = _start_server(port=port)
    try:
        assert client.invoke_sync(addr, _req(3), 3000).body == b"body-3"
        assert client.is_connected(addr)
    finally:
        st2.stop()


def test_close_connection_fails_its_pending_calls(client: RemotingClient) -> None:
    hold = Hold()
    st, _ = _start_server(processors={10: hold})
    addr = f"127.0.0.1:{st.port}"
    try:
        fut = client.invoke_async(addr, _req(1, code=10), 20000)
        assert hold.received.wait(5)
        client.close_connection(addr)
        with pytest.raises(ConnectError):
            fut.result(5)
        assert not client.is_connected(addr)
        assert client.invoke_sync(addr, _req(2), 3000).body == b"body-2"  # reconnects
    finally:
        st.stop()


def test_close_fails_pending_calls_and_leaves_no_thread() -> None:
    before = set(threading.enumerate())
    hold = Hold()
    st, _ = _start_server(processors={10: hold})
    addr = f"127.0.0.1:{st.port}"
    c = RemotingClient(name="closing")
    c.start()
    try:
        fut = c.invoke_async(addr, _req(1, code=10), 30000)
        sync_result: list[BaseException] = []

        def sync_call() -> None:
            try:
                c.invoke_sync(addr, _req(2, code=10), 30000)
            except BaseException as exc:
                sync_result.append(exc)

        t = threading.Thread(target=sync_call)
        t.start()
        deadline = time.monotonic() + 5
        while hold.count < 2 and time.monotonic() < deadline:  # both calls are on the wire
            time.sleep(0.01)
        assert hold.count == 2
        t0 = time.monotonic()
        c.close()
        t.join(5)
        assert time.monotonic() - t0 < 3
        assert isinstance(sync_result[0], ConnectError)
        with pytest.raises(ConnectError):
            fut.result(1)
        with pytest.raises(ClientError):
            c.invoke_sync(addr, _req(3), 1000)
        with pytest.raises(ClientError):
            c.invoke_oneway(addr, _req(3))
        c.close()  # idempotent
    finally:
        c.close()
        st.stop()
    assert set(threading.enumerate()) <= before


def test_not_started_client_refuses_calls() -> None:
    c = RemotingClient(name="idle")
    with pytest.raises(ClientError):
        c.invoke_sync("127.0.0.1:1", _req(1), 100)
    c.close()


class Slow:
    """Answers after 200 ms (so a done-callback is attached before the answer comes)."""

    async def process(self, channel: Channel, request: RemotingCommand) -> RemotingCommand | None:
        await asyncio.sleep(0.2)
        return request.make_response(0, body=request.body)


def test_invoke_sync_on_the_io_thread_raises_instead_of_deadlocking(client: RemotingClient) -> None:
    st, _ = _start_server(processors={11: Slow()})
    addr = f"127.0.0.1:{st.port}"
    seen: list[BaseException | RemotingCommand] = []
    chained: list[concurrent.futures.Future[RemotingCommand]] = []
    threads: list[str] = []
    done = threading.Event()

    def callback(f: concurrent.futures.Future[RemotingCommand]) -> None:
        threads.append(threading.current_thread().name)
        try:
            seen.append(client.invoke_sync(addr, _req(2), 1000))
        except ClientError as exc:
            seen.append(exc)
        # async calls from a callback are fine
        chained.append(client.invoke_async(addr, _req(3), 3000))
        done.set()

    try:
        client.invoke_async(addr, _req(1, code=11), 3000).add_done_callback(callback)
        assert done.wait(5)
        assert threads == [IO_THREAD_NAME]
        assert isinstance(seen[0], ClientError)
        assert "I/O thread" in str(seen[0])
        assert chained[0].result(5).body == b"body-3"
    finally:
        st.stop()


def test_oneway_is_flagged_and_not_awaited(client: RemotingClient) -> None:
    received: list[RemotingCommand] = []

    def script(sock: socket.socket, dec: FrameDecoder) -> None:
        received.extend(read_frames(sock, dec, 2))
        sock.sendall(received[1].make_response(0).encode())
        wait_eof(sock)

    peer = RawPeer(script)
    req = _req(1, code=RequestCode.UPDATE_CONSUMER_OFFSET)
    client.invoke_oneway(peer.addr, req)
    assert client.invoke_sync(peer.addr, _req(2), 3000).code == 0
    client.close_connection(peer.addr)
    peer.join()
    assert received[0].flag == FLAG_ONEWAY
    assert received[0].code == RequestCode.UPDATE_CONSUMER_OFFSET
    assert received[1].flag == 0


def test_opaque_counter_wraps_within_int32(client: RemotingClient) -> None:
    client._opaques = RequestIdCounter(2**31 - 2)
    assert [client.next_opaque() for _ in range(3)] == [2**31 - 2, 2**31 - 1, -(2**31)]
    # the wrapped opaque still fits the binary header
    cmd = _req(1, BINARY)
    cmd.opaque = -(2**31)
    assert decode_frame(cmd.encode()).opaque == -(2**31)


def test_parse_addr() -> None:
    assert parse_addr("127.0.0.1:10911") == ("127.0.0.1", 10911)
    assert parse_addr("[::1]:9876") == ("::1", 9876)
    for bad in ("10911", "host:", "host:0", "host:70000", "host:x"):
        with pytest.raises(IllegalArgumentError):
            parse_addr(bad)


# ---------------------------------------------------------------------- server -> client requests
class Asker:
    """On any request, asks the client something over the same channel and relays the answer."""

    def __init__(self, code: int, oneway: bool = False) -> None:
        self.code = code
        self.oneway = oneway

    async def process(self, channel: Channel, request: RemotingCommand) -> RemotingCommand | None:
        ask = RemotingCommand.request(
            self.code, {"consumerGroup": "G"}, serialize_type=request.serialize_type
        )
        if self.oneway:
            channel.invoke_oneway(ask)
            return request.make_response(0)
        answer = await channel.invoke(ask, 3000)
        return request.make_response(answer.code, remark=answer.remark, body=answer.body)


def test_server_to_client_requests_run_off_the_io_thread() -> None:
    calls: list[tuple[int, int, str, str]] = []
    notified = threading.Event()

    def handler(request: RemotingCommand, addr: str) -> RemotingCommand | None:
        calls.append((request.code, request.flag, addr, threading.current_thread().name))
        if request.code == RequestCode.NOTIFY_CONSUMER_IDS_CHANGED:
            notified.set()
            return request.make_response(0)  # oneway: must not be sent
        if request.code == RequestCode.CONSUME_MESSAGE_DIRECTLY:
            raise RuntimeError("listener exploded")
        time.sleep(0.05)  # a slow handler must not stall I/O
        return RemotingCommand(code=0, opaque=12345, body=b"running-info")  # opaque/flag fixed by the client

    server = RemotingServer(name="asker")
    server.register_processor(1, Asker(RequestCode.GET_CONSUMER_RUNNING_INFO))
    server.register_processor(2, Asker(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, oneway=True))
    server.register_processor(3, Asker(RequestCode.CONSUME_MESSAGE_DIRECTLY))
    server.register_default_processor(Echo())
    st = ServerThread(server)
    st.start()
    addr = f"127.0.0.1:{st.port}"
    c = RemotingClient(name="handled", request_handler=handler)
    c.start()
    try:
        slow = c.invoke_async(addr, _req(1, code=1), 5000)
        # while the handler sleeps, plain calls keep flowing
        assert c.invoke_sync(addr, _req(5), 3000).body == b"body-5"
        resp = slow.result(5)
        assert (resp.code, resp.body) == (0, b"running-info")
        for stype in (JSON, BINARY):
            assert c.invoke_sync(addr, _req(2, stype, code=2), 3000).code == 0
        assert notified.wait(5)
        err = c.invoke_sync(addr, _req(3, code=3), 3000)
        assert err.code == ResponseCode.SYSTEM_ERROR
        assert err.remark == "RuntimeError: listener exploded"
    finally:
        c.close()
        st.stop()
    assert {name.rsplit("_", 1)[0] for *_, name in calls} == {"handled-handler"}
    assert calls[0][:3] == (RequestCode.GET_CONSUMER_RUNNING_INFO, 0, addr)
    assert calls[1][1] == FLAG_ONEWAY


def test_server_to_client_request_without_handler_is_not_supported(client: RemotingClient) -> None:
    server = RemotingServer(name="asker")
    server.register_default_processor(Asker(RequestCode.GET_CONSUMER_RUNNING_INFO))
    st = ServerThread(server)
    st.start()
    try:
        resp = client.invoke_sync(f"127.0.0.1:{st.port}", _req(1), 3000)
    finally:
        st.stop()
    assert resp.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    assert resp.remark == " request type 307 not supported"


def test_no_handler_ignores_oneway_server_requests(client: RemotingClient) -> None:
    def script(sock: socket.socket, dec: FrameDecoder) -> None:
        (req,) = read_frames(sock, dec, 1)
        notify = RemotingCommand(code=RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, flag=FLAG_ONEWAY, opaque=5)
        ask = RemotingCommand(code=RequestCode.GET_CONSUMER_RUNNING_INFO, opaque=6, serialize_type=BINARY)
        sock.sendall(notify.encode() + ask.encode())
        (answer,) = read_frames(sock, dec, 1)  # only the non-oneway one is answered
        assert (answer.opaque, answer.flag, answer.code) == (6, FLAG_RESPONSE, 3)
        sock.sendall(req.make_response(0).encode())
        wait_eof(sock)

    peer = RawPeer(script)
    assert client.invoke_sync(peer.addr, _req(1), 5000).code == 0
    client.close_connection(peer.addr)
    peer.join()


# ---------------------------------------------------------------------- ServiceThread
class Counter(ServiceThread):
    def __init__(self) -> None:
        super().__init__("counter-svc", interval_s=10.0)
        self.rounds = 0
        self.ran = threading.Event()

    def run_once(self) -> None:
        self.rounds += 1
        self.ran.set()
        if self.rounds == 2:
            raise ValueError("logged, not fatal")


def test_service_thread_wakeup_and_shutdown() -> None:
    svc = Counter()
    svc.start()
    svc.start()  # idempotent
    assert svc.ran.wait(5)
    assert [t.name for t in threading.enumerate()].count("counter-svc") == 1
    for expected in (2, 3):
        svc.ran.clear()
        svc.wakeup()  # cuts the 10 s wait short
        assert svc.ran.wait(5)
        assert svc.rounds == expected  # the exception of round 2 did not end the loop
    t0 = time.monotonic()
    svc.shutdown(5)
    assert time.monotonic() - t0 < 2
    assert svc.stopped and not svc.is_alive
    assert "counter-svc" not in [t.name for t in threading.enumerate()]


def test_wait_for_running_returns_early_on_pending_wakeup() -> None:
    svc = ServiceThread("waiter")
    ends: list[int] = []
    svc.on_wait_end = lambda: ends.append(1)  # type: ignore[method-assign]
    t0 = time.monotonic()
    svc.wait_for_running(0.05)  # no wakeup: sleeps the interval
    assert time.monotonic() - t0 >= 0.04
    svc.wakeup()
    t0 = time.monotonic()
    svc.wait_for_running(10)  # wakeup arrived before the wait: returns at once
    assert time.monotonic() - t0 < 1
    assert ends == [1, 1]
    svc.shutdown()
    svc.wait_for_running(10)  # stopped: never sleeps
    assert svc.stopped
