"""RemotingServer on real loopback sockets: dispatch, errors, oneway, bad peers, idleness, shutdown."""

from __future__ import annotations

import asyncio
import socket
import struct
import threading
import time
from collections.abc import Iterator

import pytest

from rocketq.errors import ConnectError, RequestTimeoutError
from rocketq.protocol.codes import RequestCode, ResponseCode, SerializeType
from rocketq.protocol.frame import FLAG_ONEWAY, FLAG_RESPONSE, FrameDecoder, RemotingCommand
from rocketq.remoting.client import RemotingClient
from rocketq.remoting.server import Channel, DeferredResponse, RemotingServer, ServerThread
from tests.conftest import load_golden_frames

pytestmark = pytest.mark.timeout(60)

JSON = SerializeType.JSON
BINARY = SerializeType.ROCKETMQ


# ---------------------------------------------------------------------- helpers
class Echo:
    def __init__(self) -> None:
        self.seen: list[RemotingCommand] = []

    async def process(self, channel: Channel, request: RemotingCommand) -> RemotingCommand | None:
        self.seen.append(request)
        return request.make_response(0, ext_fields=request.ext_fields, body=request.body)


class Boom:
    async def process(self, channel: Channel, request: RemotingCommand) -> RemotingCommand | None:
        raise KeyError("no such topic config")


class AnswersOneway:
    """Returns a response even for oneway requests: the server must drop it."""

    def __init__(self) -> None:
        self.calls = 0

    async def process(self, channel: Channel, request: RemotingCommand) -> RemotingCommand | None:
        self.calls += 1
        return request.make_response(0, remark="should not be sent")


class Sleepy:
    """Sleeps ``int(n)`` x 50 ms before answering: later requests can finish first."""

    async def process(self, channel: Channel, request: RemotingCommand) -> RemotingCommand | None:
        await asyncio.sleep(int(request.ext("n") or 0) * 0.05)
        return request.make_response(0, body=request.body)


class Manual:
    """Builds its response by hand in JSON: the server still answers in the request's type."""

    async def process(self, channel: Channel, request: RemotingCommand) -> RemotingCommand | None:
        return RemotingCommand(code=0, remark="manual", serialize_type=JSON)


class Busy:
    def reject_request(self) -> bool:
        return True

    async def process(self, channel: Channel, request: RemotingCommand) -> RemotingCommand | None:
        raise AssertionError("a rejecting processor is never called")


class Later:
    """Holds every request and lets a foreign thread answer it with Channel.write."""

    def __init__(self) -> None:
        self.held: list[tuple[Channel, RemotingCommand]] = []
        self.arrived = threading.Event()

    async def process(self, channel: Channel, request: RemotingCommand) -> RemotingCommand | None:
        self.held.append((channel, request))
        self.arrived.set()
        return None


@pytest.fixture
def server() -> Iterator[tuple[ServerThread, Echo]]:
    srv = RemotingServer(name="tserver")
    echo = Echo()
    srv.register_processor(RequestCode.SEND_MESSAGE_V2, echo)
    srv.register_processor(1000, Boom())
    srv.register_processor(1001, AnswersOneway())
    srv.register_processor(1002, Sleepy())
    srv.register_processor(1003, Manual())
    srv.register_processor(1004, Busy())
    st = ServerThread(srv)
    st.start()
    try:
        yield st, echo
    finally:
        st.stop()
    assert not [t for t in threading.enumerate() if t.name == "tserver-loop"]


def connect(st: ServerThread) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", st.port), timeout=10)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def read_frames(sock: socket.socket, decoder: FrameDecoder, n: int) -> list[RemotingCommand]:
    out: list[RemotingCommand] = []
    while len(out) < n:
        data = sock.recv(1 << 20)
        if not data:
            raise EOFError("server closed the connection")
        out += decoder.feed(data)
    return out


def is_closed_by_peer(sock: socket.socket) -> bool:
    try:
        while True:
            if not sock.recv(65536):
                return True
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def req(
    code: int, n: int = 0, stype: int = JSON, *, oneway: bool = False, opaque: int = 0
) -> RemotingCommand:
    cmd = RemotingCommand.request(code, {"n": str(n)}, f"b{n}".encode(), oneway=oneway, serialize_type=stype)
    cmd.opaque = opaque
    return cmd


# ---------------------------------------------------------------------- dispatch
@pytest.mark.parametrize("stype", [JSON, BINARY], ids=["json", "rocketmq"])
def test_dispatch_by_code_answers_in_the_request_serialize_type(
    server: tuple[ServerThread, Echo], stype: int
) -> None:
    st, echo = server
    with connect(st) as sock:
        dec = FrameDecoder()
        sock.sendall(
            req(RequestCode.SEND_MESSAGE_V2, 1, stype, opaque=41).encode()
            + req(1003, 2, stype, opaque=42).encode()
        )
        first, second = sorted(read_frames(sock, dec, 2), key=lambda c: c.opaque)
    assert (first.opaque, first.flag, first.code, first.body) == (41, FLAG_RESPONSE, 0, b"b1")
    assert first.serialize_type == stype
    assert echo.seen[0].serialize_type == stype and echo.seen[0].ext_fields == {"n": "1"}
    # the hand-made JSON response is re-typed like the request (setSerializeTypeCurrentRPC)
    assert (second.opaque, second.flag, second.remark, second.serialize_type) == (
        42,
        FLAG_RESPONSE,
        "manual",
        stype,
    )


def test_unknown_code_without_default_processor_is_not_supported(server: tuple[ServerThread, Echo]) -> None:
    st, _ = server
    with connect(st) as sock:
        dec = FrameDecoder()
        sock.sendall(req(RequestCode.GET_ROUTEINFO_BY_TOPIC, stype=BINARY, opaque=7).encode())
        (resp,) = read_frames(sock, dec, 1)
        assert (resp.code, resp.opaque, resp.flag) == (
            ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
            7,
            FLAG_RESPONSE,
        )
        assert resp.remark == " request type 105 not supported"
        # written by the machinery with the default serialize type, as Java does
        assert resp.serialize_type == JSON
        # Java 4.9.x answers this one even for a oneway request
        sock.sendall(req(RequestCode.GET_ROUTEINFO_BY_TOPIC, oneway=True, opaque=8).encode())
        (resp,) = read_frames(sock, dec, 1)
        assert (resp.code, resp.opaque) == (ResponseCode.REQUEST_CODE_NOT_SUPPORTED, 8)


def test_default_processor_takes_unregistered_codes() -> None:
    srv = RemotingServer(name="dflt")
    echo = Echo()
    srv.register_default_processor(echo)
    st = ServerThread(srv)
    st.start()
    try:
        with RemotingClient(name="dflt-c") as c:
            resp = c.invoke_sync(f"127.0.0.1:{st.port}", req(RequestCode.GET_ROUTEINFO_BY_TOPIC, 3), 3000)
    finally:
        st.stop()
    assert resp.code == 0 and resp.body == b"b3"
    assert echo.seen[0].code == RequestCode.GET_ROUTEINFO_BY_TOPIC


def test_processor_exception_is_system_error_and_connection_stays_up(
    server: tuple[ServerThread, Echo],
) -> None:
    st, _ = server
    with connect(st) as sock:
        dec = FrameDecoder()
        sock.sendall(req(1000, opaque=1).encode())
        (resp,) = read_frames(sock, dec, 1)
        assert (resp.code, resp.opaque, resp.flag) == (ResponseCode.SYSTEM_ERROR, 1, FLAG_RESPONSE)
        assert resp.remark == "KeyError: 'no such topic config'"
        sock.sendall(req(RequestCode.SEND_MESSAGE_V2, 5, opaque=2).encode())
        (ok,) = read_frames(sock, dec, 1)
        assert (ok.code, ok.opaque, ok.body) == (0, 2, b"b5")


def test_oneway_requests_get_no_response_even_if_the_processor_returns_one(
    server: tuple[ServerThread, Echo],
) -> None:
    st, _ = server
    with connect(st) as sock:
        dec = FrameDecoder()
        sock.sendall(req(1001, oneway=True, opaque=1).encode() + req(1000, oneway=True, opaque=2).encode())
        sock.sendall(req(RequestCode.SEND_MESSAGE_V2, opaque=3).encode())
        (resp,) = read_frames(sock, dec, 1)
        assert resp.opaque == 3  # nothing came for opaques 1 and 2
        sock.settimeout(0.2)
        with pytest.raises(TimeoutError):
            sock.recv(1)


def test_reject_request_answers_system_busy(server: tuple[ServerThread, Echo]) -> None:
    st, _ = server
    with connect(st) as sock:
        sock.sendall(req(1004, opaque=9).encode())
        (resp,) = read_frames(sock, FrameDecoder(), 1)
    assert (resp.code, resp.opaque) == (ResponseCode.SYSTEM_BUSY, 9)
    assert resp.remark == "[REJECTREQUEST]system busy, start flow control for a while"


def test_responses_leave_in_completion_order(server: tuple[ServerThread, Echo]) -> None:
    st, _ = server
    with connect(st) as sock:
        sock.sendall(b"".join(req(1002, n, opaque=n).encode() for n in (4, 2, 0)))
        got = read_frames(sock, FrameDecoder(), 3)
    assert [r.opaque for r in got] == [0, 2, 4]


def test_large_and_small_responses_of_one_chunk_arrive_whole_and_in_order(
    server: tuple[ServerThread, Echo],
) -> None:
    # Bodies of 64 KiB and more are written on their own (not joined with their
    # neighbours): frames must still arrive intact and in request order.
    st, _ = server
    bodies = [b"s1", bytes(range(256)) * 1024, b"s2", b"x" * 70_000, bytes(200_000), b"s3"]
    requests = []
    for i, body in enumerate(bodies):
        cmd = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, {"n": str(i)}, body)
        cmd.opaque = i
        requests.append(cmd.encode())
    with connect(st) as sock:
        sock.sendall(b"".join(requests))
        got = read_frames(sock, FrameDecoder(), len(bodies))
    assert [r.opaque for r in got] == list(range(len(bodies)))
    assert [r.body for r in got] == bodies


def test_encode_parts_is_encode_split_before_the_body() -> None:
    cmd = req(RequestCode.SEND_MESSAGE_V2, 7)
    head, body = cmd.encode_parts()
    assert body == b"b7"
    assert head + body == cmd.encode()
    empty = RemotingCommand.request(RequestCode.HEART_BEAT)
    assert empty.encode_parts() == (empty.encode(), b"")


def test_golden_request_frames_are_dispatched() -> None:
    golden = [
        f for f in load_golden_frames("producer.jsonl") if not f.is_response and f.dir == "client->server"
    ]
    srv = RemotingServer(name="golden")
    echo = Echo()
    srv.register_default_processor(echo)
    st = ServerThread(srv)
    st.start()
    try:
        with connect(st) as sock:
            sock.sendall(b"".join(f.frame for f in golden))  # one burst, Java's bytes as captured
            answered = [f for f in golden if not f.flag & FLAG_ONEWAY]
            got = read_frames(sock, FrameDecoder(), len(answered))
    finally:
        st.stop()
    assert [c.code for c in echo.seen] == [f.code for f in golden]
    assert sorted(r.opaque for r in got) == sorted(f.opaque for f in answered)


# ---------------------------------------------------------------------- bad peers
def test_garbage_and_oversized_frames_close_only_that_connection(server: tuple[ServerThread, Echo]) -> None:
    st, _ = server
    addr = f"127.0.0.1:{st.port}"
    stop = threading.Event()
    counts = [0]
    errors: list[BaseException] = []

    def good_client() -> None:
        try:
            with RemotingClient(name="good") as c:
                while not stop.is_set():
                    n = counts[0]
                    assert (
                        c.invoke_sync(addr, req(RequestCode.SEND_MESSAGE_V2, n), 3000).body
                        == f"b{n}".encode()
                    )
                    counts[0] += 1
        except BaseException as exc:
            errors.append(exc)

    worker = threading.Thread(target=good_client)
    worker.start()
    try:
        while counts[0] < 20:
            time.sleep(0.01)
        garbage = connect(st)
        # a JSON header that is not JSON
        garbage.sendall(struct.pack(">iI", 12, 8) + b"not json")
        oversized = connect(st)
        # a 17 MiB length prefix (NettyDecoder's limit is 16 MiB)
        oversized.sendall(struct.pack(">i", 17 * 1024 * 1024) + b"\x00" * 64)
        negative = connect(st)
        negative.sendall(struct.pack(">i", -5))
        before = counts[0]
        for sock in (garbage, oversized, negative):
            assert is_closed_by_peer(sock)
            sock.close()
        deadline = time.monotonic() + 5
        while counts[0] < before + 50 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert counts[0] >= before + 50
    finally:
        stop.set()
        worker.join(10)
    assert errors == []


def test_idle_connections_are_closed_and_listeners_told() -> None:
    # 1 s idle timeout, requests 0.25 s apart: 0.75 s of slack for a loaded machine
    srv = RemotingServer(name="idle", idle_timeout_s=1.0)
    srv.register_default_processor(Echo())
    events: list[tuple[str, str]] = []
    closed = threading.Event()

    def on_close(ch: Channel) -> None:
        events.append(("close", ch.remote_addr))
        closed.set()

    srv.add_channel_listener(on_close, on_connect=lambda ch: events.append(("connect", ch.remote_addr)))
    st = ServerThread(srv)
    st.start()
    try:
        with connect(st) as sock:
            local = "{}:{}".format(*sock.getsockname())
            # activity keeps it open past the idle timeout
            for i in range(8):
                sock.sendall(req(RequestCode.SEND_MESSAGE_V2, i, opaque=i).encode())
                read_frames(sock, FrameDecoder(), 1)
                time.sleep(0.25)
            t0 = time.monotonic()
            assert is_closed_by_peer(sock)
            assert 0.7 < time.monotonic() - t0 < 5
        assert closed.wait(5)
    finally:
        st.stop()
    assert events == [("connect", local), ("close", local)]


# ---------------------------------------------------------------------- server -> client, late writes
def test_channel_write_from_another_thread_answers_later() -> None:
    later = Later()
    srv = RemotingServer(name="late")
    srv.register_default_processor(later)
    st = ServerThread(srv)
    st.start()
    try:
        with RemotingClient(name="late-c") as c:
            fut = c.invoke_async(f"127.0.0.1:{st.port}", req(RequestCode.PULL_MESSAGE, stype=BINARY), 5000)
            assert later.arrived.wait(5)
            channel, request = later.held[0]
            assert channel.remote_addr.startswith("127.0.0.1:")
            assert channel.local_addr == f"127.0.0.1:{st.port}"
            # the hold service answers from its own thread, in JSON (PullRequestHoldService quirk)
            resp = request.make_response(ResponseCode.PULL_NOT_FOUND, remark="OFFSET_OVERFLOW_ONE")
            resp.serialize_type = JSON
            t = threading.Thread(target=channel.write, args=(resp,))
            t.start()
            t.join(5)
            got = fut.result(5)
    finally:
        st.stop()
    assert (got.code, got.remark, got.serialize_type) == (19, "OFFSET_OVERFLOW_ONE", JSON)


def test_channel_invoke_times_out_and_fails_on_close() -> None:
    later = Later()
    srv = RemotingServer(name="inv")
    srv.register_default_processor(later)
    st = ServerThread(srv)
    st.start()
    try:
        with connect(st) as sock:
            sock.sendall(req(RequestCode.HEART_BEAT).encode())
            assert later.arrived.wait(5)
            channel = later.held[0][0]
            ask = RemotingCommand.request(RequestCode.GET_CONSUMER_RUNNING_INFO, {"consumerGroup": "G"})
            with pytest.raises(RequestTimeoutError):
                st.run(channel.invoke(ask, 100))
            # the peer sees the request; answer the next one, then hang up on the third
            dec = FrameDecoder()
            (seen,) = read_frames(sock, dec, 1)
            assert seen.code == RequestCode.GET_CONSUMER_RUNNING_INFO and not seen.is_response

            async def ask_twice() -> RemotingCommand:
                task = asyncio.ensure_future(channel.invoke(RemotingCommand.request(307), 5000))
                await asyncio.sleep(0)
                return await task

            fut = asyncio.run_coroutine_threadsafe(ask_twice(), st.loop)
            (second,) = read_frames(sock, dec, 1)
            sock.sendall(second.make_response(0, body=b"info").encode())
            assert fut.result(5).body == b"info"

            third = asyncio.run_coroutine_threadsafe(
                channel.invoke(RemotingCommand.request(307), 5000), st.loop
            )
            read_frames(sock, dec, 1)
        # socket closed by the with-block
        with pytest.raises(ConnectError):
            third.result(5)
        deadline = time.monotonic() + 5
        while not channel.closed and time.monotonic() < deadline:
            time.sleep(0.01)
        assert channel.closed
        channel.write(RemotingCommand(code=0, flag=FLAG_RESPONSE))  # dropped, no error
    finally:
        st.stop()


def test_stop_closes_channels_and_cancels_running_processors() -> None:
    started = threading.Event()
    cancelled = threading.Event()

    class Forever:
        async def process(self, channel: Channel, request: RemotingCommand) -> RemotingCommand | None:
            started.set()
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                cancelled.set()
                raise
            return None

    srv = RemotingServer(name="stopper")
    srv.register_default_processor(Forever())
    closed: list[Channel] = []
    srv.add_channel_listener(closed.append)
    st = ServerThread(srv)
    st.start()
    sock = connect(st)
    try:
        sock.sendall(req(RequestCode.PULL_MESSAGE).encode())
        assert started.wait(5)
        t0 = time.monotonic()
        st.stop()
        assert time.monotonic() - t0 < 3
        assert cancelled.is_set()
        assert len(closed) == 1 and closed[0].closed
        assert is_closed_by_peer(sock)
    finally:
        sock.close()
        st.stop()  # idempotent
    assert not [t for t in threading.enumerate() if t.name == "stopper-loop"]
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", srv.port), timeout=1).close()


def test_server_thread_reports_bind_errors() -> None:
    first = ServerThread(RemotingServer(name="one"))
    first.start()
    try:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            probe.listen()
            taken = probe.getsockname()[1]
            second = ServerThread(RemotingServer(port=taken, name="two"))
            with pytest.raises(OSError):
                second.start()
    finally:
        first.stop()
    assert not [t for t in threading.enumerate() if t.name in ("one-loop", "two-loop")]


class Immediate:
    """An immediate handler: "now" answers at once, "wait" returns a coroutine that answers
    after a sleep, "boom" raises, "defer" returns a DeferredResponse answered by a callback
    after a sleep, "defer-boom" one that fails so, "defer-never" one never completed (no
    answer), "defer-early" one answered before it is returned, "defer-twice" one answered
    twice (the first counts); ``process`` must never be called."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def now(self, channel: Channel, request: RemotingCommand) -> object:
        mode = request.ext("mode") or ""
        self.calls.append(mode)
        if mode == "boom":
            raise KeyError("immediate failed")
        if mode == "none":
            return None
        if mode == "wait":
            return self._later(request)
        if mode.startswith("defer"):
            loop = asyncio.get_running_loop()
            deferred = DeferredResponse()
            answer = request.make_response(0, remark=f"deferred {mode}", body=request.body)
            if mode == "defer-boom":
                loop.call_later(0.01, deferred.fail, KeyError("finish failed"))
            elif mode == "defer-early":
                deferred.answer(answer)
            elif mode == "defer-twice":
                loop.call_later(0.01, deferred.answer, answer)
                loop.call_later(0.02, deferred.answer, request.make_response(0, remark="second"))
                loop.call_later(0.03, deferred.fail, KeyError("third"))
            elif mode != "defer-never":
                loop.call_later(0.01, deferred.answer, answer)
            return deferred
        return request.make_response(0, remark="now", body=request.body)

    async def _later(self, request: RemotingCommand) -> RemotingCommand:
        await asyncio.sleep(0.01)
        return request.make_response(0, remark="later", body=request.body)

    async def process(self, channel: Channel, request: RemotingCommand) -> RemotingCommand | None:
        raise AssertionError("a processor with an immediate handler is served through it")


def test_immediate_handler_answers_now_later_or_with_system_error() -> None:
    srv = RemotingServer(name="timmediate")
    handler = Immediate()
    srv.register_processor(1005, handler, immediate=handler.now)  # type: ignore[arg-type]
    st = ServerThread(srv)
    st.start()
    try:
        with connect(st) as sock:
            dec = FrameDecoder()
            frames = b""
            modes = (
                "wait",
                "now",
                "boom",
                "none",
                "now",
                "defer",
                "defer-boom",
                "defer-never",
                "defer-early",
                "defer-twice",
            )
            for opaque, mode in enumerate(modes, start=1):
                cmd = RemotingCommand.request(1005, {"mode": mode}, mode.encode())
                cmd.opaque = opaque
                frames += cmd.encode()
            sock.sendall(frames)
            got = {c.opaque: c for c in read_frames(sock, dec, 8)}
            # nothing more: no answer to "none" nor to "defer-never", one to "defer-twice";
            # and the connection stays open
            sock.settimeout(0.2)
            extra = b""
            closed = False
            try:
                while True:
                    chunk = sock.recv(65536)
                    if not chunk:
                        closed = True
                        break
                    extra += chunk
            except TimeoutError:
                pass
            assert (extra, closed) == (b"", False)
    finally:
        st.stop()
    assert handler.calls == list(modes)
    assert sorted(got) == [1, 2, 3, 5, 6, 7, 9, 10]
    assert (got[1].code, got[1].remark, got[1].body, got[1].flag) == (0, "later", b"wait", FLAG_RESPONSE)
    assert (got[2].remark, got[5].remark) == ("now", "now")
    assert got[3].code == ResponseCode.SYSTEM_ERROR and "KeyError" in (got[3].remark or "")
    for opaque, mode in ((6, "defer"), (9, "defer-early"), (10, "defer-twice")):
        assert (got[opaque].code, got[opaque].remark, got[opaque].body, got[opaque].flag) == (
            0,
            f"deferred {mode}",
            mode.encode(),
            FLAG_RESPONSE,
        )
    assert got[7].code == ResponseCode.SYSTEM_ERROR and "finish failed" in (got[7].remark or "")


def test_deferred_response_wait_gives_the_answer_to_a_caller_of_process() -> None:
    async def run() -> tuple[str | None, str | None, str]:
        loop = asyncio.get_running_loop()
        later, early, failed = DeferredResponse(), DeferredResponse(), DeferredResponse()
        loop.call_soon(later.answer, RemotingCommand(code=0, remark="later"))
        early.answer(RemotingCommand(code=0, remark="early"))
        loop.call_soon(failed.fail, OSError("disk"))
        first = await later.wait()
        second = await early.wait()
        try:
            await failed.wait()
        except OSError as exc:
            third = str(exc)
        else:
            third = "no error"
        return (first.remark if first else None, second.remark if second else None, third)

    assert asyncio.run(run()) == ("later", "early", "disk")


class AfterChunk:
    """Asks the server to run a callback once the request's chunk has written its answers; the
    callback writes one more frame. Records the order of what ran on the loop."""

    def __init__(self, srv: RemotingServer) -> None:
        self.srv = srv
        self.events: list[str] = []

    async def process(self, channel: Channel, request: RemotingCommand) -> RemotingCommand | None:
        n = request.ext("n")
        asyncio.get_running_loop().call_soon(self.events.append, f"next iteration {n}")

        def after() -> None:
            self.events.append(f"after chunk {n}")
            late = RemotingCommand(
                code=0, remark=f"late {n}", flag=FLAG_RESPONSE, opaque=100 + request.opaque
            )
            channel.write(late)

        assert self.srv.call_after_chunk(after)
        self.events.append(f"request {n}")
        return request.make_response(0, remark=f"answer {n}")


def test_call_after_chunk_runs_once_the_chunk_answered_in_the_same_iteration() -> None:
    srv = RemotingServer(name="tafter")
    proc = AfterChunk(srv)
    srv.register_processor(1006, proc)
    st = ServerThread(srv)
    st.start()
    try:
        with connect(st) as sock:
            # two requests in one write: one chunk
            sock.sendall(req(1006, 1, opaque=1).encode() + req(1006, 2, opaque=2).encode())
            got = read_frames(sock, FrameDecoder(), 4)
        # outside a request chunk nothing is kept: the caller schedules its callback itself
        assert st.call(lambda: srv.call_after_chunk(lambda: proc.events.append("never"))) is False
    finally:
        st.stop()
    assert [(c.opaque, c.remark) for c in got] == [
        (1, "answer 1"),
        (2, "answer 2"),
        (101, "late 1"),
        (102, "late 2"),
    ]
    assert proc.events == [
        "request 1",
        "request 2",
        "after chunk 1",
        "after chunk 2",
        "next iteration 1",
        "next iteration 2",
    ]
