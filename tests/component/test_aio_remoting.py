"""AsyncRemotingClient against a scripted server speaking real frames on 127.0.0.1.

Each test runs on the stdlib loop and, when uvloop is installed, on uvloop too.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import pytest

from rocketq.aio.instance import AsyncClientInstance
from rocketq.aio.remoting import AsyncRemotingClient, _wait_for_scope, _wait_for_task, wait_event
from rocketq.client.config import ClientConfig
from rocketq.errors import ConnectError, RequestTimeoutError
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frame import FLAG_ONEWAY, FLAG_RESPONSE, FrameDecoder, RemotingCommand
from rocketq.testing.waits import async_wait_until

try:
    import uvloop
except ImportError:  # pragma: no cover - uvloop is an optional extra
    uvloop = None  # type: ignore[assignment]

LOOPS = ["asyncio", *(["uvloop"] if uvloop is not None else [])]

#: ``(server writer, request) -> None``: how the scripted server treats one client request
Script = Callable[[asyncio.StreamWriter, RemotingCommand], Awaitable[None]]


def run(kind: str, coro: Coroutine[Any, Any, None]) -> None:
    if kind == "uvloop":
        assert uvloop is not None
        uvloop.run(coro)
    else:
        asyncio.run(coro)


class Server:
    """A server that decodes frames and hands each request to ``script``."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.received: list[RemotingCommand] = []
        self.writers: list[asyncio.StreamWriter] = []
        self.responses: asyncio.Queue[RemotingCommand] = asyncio.Queue()
        self.server: asyncio.AbstractServer | None = None

    async def __aenter__(self) -> str:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self.server.sockets[0].getsockname()[1]
        return f"127.0.0.1:{port}"

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        for w in self.writers:
            w.close()
        self.server.close()
        await self.server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.writers.append(writer)
        decoder = FrameDecoder()
        while data := await reader.read(65536):
            for cmd in decoder.feed(data):
                if cmd.flag & FLAG_RESPONSE:
                    self.responses.put_nowait(cmd)
                else:
                    self.received.append(cmd)
                    await self.script(writer, cmd)


def answer(cmd: RemotingCommand, remark: str) -> bytes:
    return RemotingCommand(code=0, flag=FLAG_RESPONSE, opaque=cmd.opaque, remark=remark).encode()


@pytest.mark.parametrize("kind", LOOPS)
def test_out_of_order_answers_match_by_opaque(kind: str) -> None:
    held: list[RemotingCommand] = []

    async def script(w: asyncio.StreamWriter, cmd: RemotingCommand) -> None:
        held.append(cmd)
        if len(held) == 3:  # answer the three calls in reverse order, in one write
            w.write(b"".join(answer(c, c.remark or "") for c in reversed(held)))

    async def main() -> None:
        async with Server(script) as addr, AsyncRemotingClient() as client:
            calls = [client.invoke(addr, RemotingCommand(code=10, remark=f"r{i}"), 3000) for i in range(3)]
            results = await asyncio.gather(*calls)
            assert [r.remark for r in results] == ["r0", "r1", "r2"]
            assert len({c.opaque for c in held}) == 3

    run(kind, main())


class SpyTransport:
    """Forwards to the connection's transport and records each write."""

    def __init__(self, inner: asyncio.Transport) -> None:
        self.inner = inner
        self.writes: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.writes.append(bytes(data))
        self.inner.write(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.mark.parametrize("kind", LOOPS)
def test_a_lone_call_is_written_at_once_and_a_burst_in_one_write(kind: str) -> None:
    """With no call in flight the request leaves within the caller's step (no loop callback
    between); while calls are in flight, the frames of one loop iteration leave together."""
    held: list[RemotingCommand] = []
    release = asyncio.Event()

    async def script(w: asyncio.StreamWriter, cmd: RemotingCommand) -> None:
        if cmd.remark == "warm":
            w.write(answer(cmd, "warm"))
            return
        held.append(cmd)
        if len(held) == 3:
            await release.wait()
            w.write(b"".join(answer(c, c.remark or "") for c in held))

    async def main() -> None:
        async with Server(script) as addr, AsyncRemotingClient() as client:
            await client.invoke(addr, RemotingCommand(code=10, remark="warm"), 3000)  # connects
            conn = client._conns[addr]
            assert conn.transport is not None
            spy = SpyTransport(conn.transport)
            conn.transport = spy  # type: ignore[assignment]
            first = asyncio.ensure_future(client.invoke(addr, RemotingCommand(code=10, remark="r0"), 3000))
            await asyncio.sleep(0)  # the call's first step ran; no flush callback has yet
            assert len(spy.writes) == 1
            burst = [
                asyncio.ensure_future(client.invoke(addr, RemotingCommand(code=10, remark=f"r{i}"), 3000))
                for i in (1, 2)
            ]
            await asyncio.sleep(0)
            assert len(spy.writes) == 1  # r0 is in flight: r1 and r2 are queued ...
            await async_wait_until(lambda: len(spy.writes) == 2, 5.0, "the flush")
            decoded = FrameDecoder().feed(spy.writes[1])  # ... and leave in one write
            assert [c.remark for c in decoded] == ["r1", "r2"]
            release.set()
            results = await asyncio.gather(first, *burst)
            assert [r.remark for r in results] == ["r0", "r1", "r2"]

    run(kind, main())


@pytest.mark.parametrize("kind", LOOPS)
def test_one_timer_serves_the_deadlines_of_every_call(kind: str) -> None:
    """Calls share one loop timer per connection: after many answered calls (their entries
    pruned), a later call with a shorter timeout still fails first and each at its own time."""

    async def script(w: asyncio.StreamWriter, cmd: RemotingCommand) -> None:
        if cmd.remark == "ok":
            w.write(answer(cmd, "ok"))

    async def timed(client: AsyncRemotingClient, addr: str, timeout_ms: int) -> tuple[float, str]:
        loop = asyncio.get_running_loop()
        begin = loop.time()
        with pytest.raises(RequestTimeoutError) as info:
            await client.invoke(addr, RemotingCommand(code=10, remark="silent"), timeout_ms)
        return loop.time() - begin, str(info.value)

    async def main() -> None:
        async with Server(script) as addr, AsyncRemotingClient() as client:
            for _ in range(200):
                assert (
                    await client.invoke(addr, RemotingCommand(code=10, remark="ok"), 30_000)
                ).remark == "ok"
            conn = client._conns[addr]
            assert len(conn._deadlines) <= 65  # answered calls do not pile up
            done: list[int] = []

            async def one(timeout_ms: int) -> tuple[float, str]:
                out = await timed(client, addr, timeout_ms)
                done.append(timeout_ms)
                return out

            (slow, slow_msg), (fast, fast_msg) = await asyncio.gather(one(400), one(150))
            assert done == [150, 400]
            assert 0.14 <= fast < 5.0 and 0.39 <= slow < 5.0
            assert "timeout 150ms" in fast_msg and "timeout 400ms" in slow_msg
            assert conn.pending == {}

    run(kind, main())


@pytest.mark.parametrize("kind", LOOPS)
def test_timeout_oneway_hook_and_late_answer_dropped(kind: str) -> None:
    async def script(w: asyncio.StreamWriter, cmd: RemotingCommand) -> None:
        if cmd.code == 11:  # answered only after the caller gave up
            await asyncio.sleep(0.3)
            w.write(answer(cmd, "late"))

    async def main() -> None:
        server = Server(script)
        signed: list[int] = []

        def hook(request: RemotingCommand) -> None:
            signed.append(request.code)
            request.ext_fields = {**(request.ext_fields or {}), "Signature": "x"}

        async with server as addr, AsyncRemotingClient(request_hooks=[hook]) as client:
            with pytest.raises(RequestTimeoutError):
                await client.invoke(addr, RemotingCommand(code=11), 100)
            await client.invoke_oneway(addr, RemotingCommand(code=12))
            while len(server.received) < 2:
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.4)  # the late answer arrives and is dropped without harm
            assert server.received[1].flag & FLAG_ONEWAY
            assert all(c.ext_fields and c.ext_fields["Signature"] == "x" for c in server.received)
            assert signed == [11, 12]
            assert client.is_connected(addr)

    run(kind, main())


@pytest.mark.parametrize("kind", LOOPS)
def test_lost_connection_fails_pending_calls_and_reconnects(kind: str) -> None:
    async def script(w: asyncio.StreamWriter, cmd: RemotingCommand) -> None:
        if cmd.code == 20:
            w.close()
        else:
            w.write(answer(cmd, "ok"))

    async def main() -> None:
        async with Server(script) as addr, AsyncRemotingClient() as client:
            with pytest.raises(ConnectError):
                await client.invoke(addr, RemotingCommand(code=20), 3000)
            assert (await client.invoke(addr, RemotingCommand(code=21), 3000)).remark == "ok"

    run(kind, main())


@pytest.mark.parametrize("kind", LOOPS)
def test_malformed_frame_closes_the_connection(kind: str) -> None:
    async def script(w: asyncio.StreamWriter, cmd: RemotingCommand) -> None:
        w.write(b"\x7f\xff\xff\xff" + b"\x00" * 8)  # a frame length over the maximum

    async def main() -> None:
        async with Server(script) as addr, AsyncRemotingClient() as client:
            with pytest.raises(ConnectError, match="malformed"):
                await client.invoke(addr, RemotingCommand(code=30), 3000)
            assert not client.is_connected(addr)

    run(kind, main())


@pytest.mark.parametrize("kind", LOOPS)
def test_server_requests_are_answered_by_the_handler(kind: str) -> None:
    server_box: list[Server] = []

    async def script(w: asyncio.StreamWriter, cmd: RemotingCommand) -> None:
        # the server asks the client two things back: a handled code and an unknown one
        w.write(RemotingCommand(code=RequestCode.GET_CONSUMER_RUNNING_INFO, opaque=900).encode())
        w.write(RemotingCommand(code=999, opaque=901).encode())
        w.write(answer(cmd, "done"))

    async def handler(request: RemotingCommand, addr: str) -> RemotingCommand | None:
        if request.code == RequestCode.GET_CONSUMER_RUNNING_INFO:
            return RemotingCommand(code=ResponseCode.SUCCESS, body=b"info")
        raise ValueError("unknown")

    async def main() -> None:
        server = Server(script)
        server_box.append(server)
        async with server as addr, AsyncRemotingClient(request_handler=handler) as client:
            await client.invoke(addr, RemotingCommand(code=40), 3000)
            got = [await asyncio.wait_for(server.responses.get(), 3) for _ in range(2)]
            by_opaque = {r.opaque: r for r in got}
            assert by_opaque[900].code == ResponseCode.SUCCESS and by_opaque[900].body == b"info"
            assert by_opaque[901].code == ResponseCode.SYSTEM_ERROR
            assert "ValueError: unknown" in (by_opaque[901].remark or "")

    run(kind, main())


@pytest.mark.parametrize("kind", LOOPS)
def test_no_thread_and_nothing_left_after_close(kind: str) -> None:
    async def script(w: asyncio.StreamWriter, cmd: RemotingCommand) -> None:
        w.write(answer(cmd, "ok"))

    async def main() -> None:
        before = set(threading.enumerate())
        async with Server(script) as addr:
            client = AsyncRemotingClient()
            await asyncio.gather(*[client.invoke(addr, RemotingCommand(code=1), 3000) for _ in range(50)])
            assert set(threading.enumerate()) == before
            await client.close()
            with pytest.raises(Exception, match="closed"):
                await client.invoke(addr, RemotingCommand(code=1), 3000)
            # the only tasks left are this test's and the scripted server's
            mine = {asyncio.current_task()}
            tasks = [t for t in asyncio.all_tasks() - mine if "Server._serve" not in repr(t.get_coro())]
            assert tasks == []

    run(kind, main())


@pytest.mark.parametrize("steps", range(4))
@pytest.mark.parametrize("kind", LOOPS)
def test_wait_event_propagates_a_cancel_landing_as_the_event_is_set(kind: str, steps: int) -> None:
    """asyncio.wait_for before 3.12 returns instead of raising when the cancel and the event
    meet in one loop step (gh-86296); wait_event raises CancelledError at every step offset."""

    async def main() -> None:
        event = asyncio.Event()
        rounds: list[bool] = []

        async def waiter_loop() -> None:
            while True:  # as AsyncClientInstance._rebalance_loop
                rounds.append(await wait_event(event, 30.0))
                event.clear()

        task = asyncio.get_running_loop().create_task(waiter_loop())
        await asyncio.sleep(0)
        event.set()
        for _ in range(steps):
            await asyncio.sleep(0)
        task.cancel()
        done, _ = await asyncio.wait((task,), timeout=2.0)
        assert done == {task}, f"the loop outlived cancel() ({steps} steps after set)"
        assert task.cancelled()
        event.clear()
        assert await wait_event(event, 0.01) is False
        event.set()
        assert await wait_event(event, 0.0) is True

    run(kind, main())


WAIT_FORS = {"timeout-scope": _wait_for_scope, "task": _wait_for_task}


@pytest.mark.parametrize("steps", range(4))
@pytest.mark.parametrize("impl", sorted(WAIT_FORS))
@pytest.mark.parametrize("kind", LOOPS)
def test_wait_for_propagates_a_cancel_landing_as_the_awaitable_completes(
    kind: str, impl: str, steps: int
) -> None:
    """Both wait_for implementations (asyncio.timeout on 3.11+, a watched task on 3.10) raise
    CancelledError when the cancel meets the inner result in one loop step (asyncio.wait_for
    before 3.12 returned the result: gh-86296), time out, and return results."""
    wait_for = WAIT_FORS[impl]

    async def main() -> None:
        loop = asyncio.get_running_loop()
        inner: list[asyncio.Future[int]] = []

        async def waiter_loop() -> None:
            while True:  # as a consume worker around its listener
                fut: asyncio.Future[int] = loop.create_future()
                inner.append(fut)
                await wait_for(fut, 30.0)

        task = loop.create_task(waiter_loop())
        await asyncio.sleep(0)
        inner[-1].set_result(1)
        for _ in range(steps):
            await asyncio.sleep(0)
        task.cancel()
        done, _ = await asyncio.wait((task,), timeout=2.0)
        assert done == {task}, f"the loop outlived cancel() ({steps} steps after the result)"
        assert task.cancelled()

        async def slow() -> int:
            await asyncio.sleep(30)
            return 0

        begin = loop.time()
        with pytest.raises(asyncio.TimeoutError):
            await wait_for(slow(), 0.05)
        assert loop.time() - begin < 5

        async def quick() -> int:
            await asyncio.sleep(0)
            return 7

        assert await wait_for(quick(), 5.0) == 7

    run(kind, main())


@pytest.mark.parametrize("steps", range(4))
@pytest.mark.parametrize("kind", LOOPS)
def test_instance_close_ends_a_rebalance_loop_woken_in_the_same_step(kind: str, steps: int) -> None:
    """NOTIFY_CONSUMER_IDS_CHANGED (rebalance_immediately) right as close() cancels: close()
    returns (it hung forever when the rebalance loop waited with asyncio.wait_for)."""

    async def main() -> None:
        inst = AsyncClientInstance(ClientConfig(namesrv_addr="127.0.0.1:9"), "127.0.0.1@test")
        await inst.start()
        await asyncio.sleep(0)
        inst.rebalance_immediately()
        for _ in range(steps):
            await asyncio.sleep(0)
        await asyncio.wait_for(inst.close(), 5.0)
        assert inst.closed

    run(kind, main())
