"""The process's one remoting I/O thread shared by every RemotingClient, and the callback-style
async call (``invoke_async_callback``), against real sockets on 127.0.0.1."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from rocketq.errors import ClientError, ConnectError, RequestTimeoutError
from rocketq.protocol.frame import FrameDecoder, RemotingCommand
from rocketq.remoting.client import IO_THREAD_NAME, RemotingClient, run_allowing_hand_off
from rocketq.remoting.server import ServerThread
from rocketq.testing.waits import wait_until
from tests.component.test_remoting_client import RawPeer, _req, _start_server, read_frames, wait_eof

# own_io_thread: run before any test that starts the session's cluster (its admin client
# keeps the I/O thread alive), so these can watch the thread start and end
pytestmark = [pytest.mark.timeout(60), pytest.mark.own_io_thread]


def _io_threads() -> list[threading.Thread]:
    """The I/O loop's thread, and any handed off from it that has not ended yet."""
    return [t for t in threading.enumerate() if t.name.startswith(IO_THREAD_NAME)]


@pytest.fixture
def echo_addr() -> Iterator[str]:
    st: ServerThread
    st, _ = _start_server()
    try:
        yield f"127.0.0.1:{st.port}"
    finally:
        st.stop()


class Outcomes:
    """What an ``invoke_async_callback`` callback saw, and on which thread."""

    def __init__(self) -> None:
        self.calls: list[tuple[RemotingCommand | None, BaseException | None, str]] = []
        self.event = threading.Event()

    def __call__(self, response: RemotingCommand | None, error: BaseException | None) -> None:
        self.calls.append((response, error, threading.current_thread().name))
        self.event.set()

    def error(self) -> BaseException:
        """The error of the one call made so far (waits for it)."""
        assert self.event.wait(5)
        ((response, error, _),) = self.calls
        assert response is None and error is not None
        return error


def test_clients_share_one_io_thread_that_ends_with_the_last(echo_addr: str) -> None:
    assert not _io_threads()  # (the tests before closed their clients)
    clients = [RemotingClient(name=f"shared{i}") for i in range(4)]
    for c in clients:
        c.start()
    try:
        assert len(_io_threads()) == 1
        reactors = {id(c._reactor) for c in clients}
        assert len(reactors) == 1
        futs = [c.invoke_async(echo_addr, _req(i), 5000) for i, c in enumerate(clients)]
        assert [f.result(5).body for f in futs] == [f"body-{i}".encode() for i in range(4)]
        # closing one client leaves the others' connections and the thread alone
        clients[0].close()
        assert len(_io_threads()) == 1
        assert not clients[0].is_connected(echo_addr)
        for i, c in enumerate(clients[1:], 1):
            assert c.is_connected(echo_addr)
            assert c.invoke_async(echo_addr, _req(10 + i), 5000).result(5).body == f"body-{10 + i}".encode()
            assert c.invoke_sync(echo_addr, _req(20 + i), 5000).body == f"body-{20 + i}".encode()
    finally:
        for c in clients:
            c.close()
    assert not _io_threads()  # joined by the last close
    # a client started afterwards gets a fresh thread, which its close ends again
    with RemotingClient(name="again") as c:
        assert len(_io_threads()) == 1
        assert c.invoke_sync(echo_addr, _req(1), 5000).body == b"body-1"
    assert not _io_threads()


def test_closing_one_client_does_not_fail_the_pending_calls_of_another() -> None:
    """A held call of client B outlives client A's close, and its answer still arrives."""
    release = threading.Event()

    def script(sock: socket.socket, dec: FrameDecoder) -> None:
        (req,) = read_frames(sock, dec, 1)
        release.wait(10)
        sock.sendall(req.make_response(0, body=b"late").encode())
        wait_eof(sock)

    peer = RawPeer(script)
    a, b = RemotingClient(name="a"), RemotingClient(name="b")
    a.start()
    b.start()
    try:
        held = Outcomes()
        b.invoke_async_callback(peer.addr, _req(1), 20_000, held)
        a_future = a.invoke_async(peer.addr, _req(2), 20_000)  # (its own connection to the peer)
        a.close()
        with pytest.raises(ConnectError):
            a_future.result(5)
        assert not held.event.is_set()
        release.set()
        assert held.event.wait(5)
        ((response, error, thread),) = held.calls
        assert error is None and response is not None and response.body == b"late"
        assert thread == IO_THREAD_NAME
        b.close_connection(peer.addr)
    finally:
        a.close()
        b.close()
        release.set()
    peer.join()


def test_callback_call_completes_once_with_its_answer(echo_addr: str) -> None:
    with RemotingClient(name="cb") as c:
        outcomes = [Outcomes() for _ in range(50)]
        for i, o in enumerate(outcomes):
            c.invoke_async_callback(echo_addr, _req(i), 5000, o)
        for i, o in enumerate(outcomes):
            assert o.event.wait(5)
            ((response, error, thread),) = o.calls
            assert error is None and response is not None and response.body == f"body-{i}".encode()
            assert thread == IO_THREAD_NAME
        time.sleep(0.05)  # nothing arrives twice
        assert all(len(o.calls) == 1 for o in outcomes)


def test_callback_call_times_out_once_and_a_late_answer_is_dropped() -> None:
    def script(sock: socket.socket, dec: FrameDecoder) -> None:
        (req,) = read_frames(sock, dec, 1)
        time.sleep(0.4)
        sock.sendall(req.make_response(0).encode())
        (ok,) = read_frames(sock, dec, 1)
        sock.sendall(ok.make_response(0, body=b"fine").encode())
        wait_eof(sock)

    peer = RawPeer(script)
    with RemotingClient(name="cbt") as c:
        o = Outcomes()
        c.invoke_async_callback(peer.addr, _req(1), 100, o)
        assert isinstance(o.error(), RequestTimeoutError)
        # the late answer (after 0.4 s) is dropped; the connection still works
        assert c.invoke_sync(peer.addr, _req(2), 5000).body == b"fine"
        assert len(o.calls) == 1
        c.close_connection(peer.addr)
    peer.join()


def test_callback_call_fails_once_when_the_connection_is_lost() -> None:
    def script(sock: socket.socket, dec: FrameDecoder) -> None:
        read_frames(sock, dec, 1)  # and close without an answer

    peer = RawPeer(script)
    with RemotingClient(name="cbl") as c:
        o = Outcomes()
        c.invoke_async_callback(peer.addr, _req(1), 20_000, o)
        assert isinstance(o.error(), ConnectError)
        wait_until(lambda: not c.is_connected(peer.addr), 5, "the connection dropped")
        assert len(o.calls) == 1
    peer.join()


def test_a_failing_callback_is_logged_and_the_io_thread_goes_on(
    echo_addr: str, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(response: RemotingCommand | None, error: BaseException | None) -> None:
        raise RuntimeError("listener bug")

    with RemotingClient(name="cbf") as c:
        c.invoke_async_callback(echo_addr, _req(1), 5000, broken)
        wait_until(lambda: "listener bug" in caplog.text, 5, "the callback's error logged")
        # the connection and the thread are fine
        o = Outcomes()
        c.invoke_async_callback(echo_addr, _req(2), 5000, o)
        assert o.event.wait(5) and o.calls[0][0] is not None
        assert c.is_connected(echo_addr)


def test_client_closed_with_callback_calls_pending_fails_each_once() -> None:
    def script(sock: socket.socket, dec: FrameDecoder) -> None:
        read_frames(sock, dec, 3)
        wait_eof(sock)

    peer = RawPeer(script)
    c = RemotingClient(name="cbc")
    c.start()
    outcomes = [Outcomes() for _ in range(3)]
    try:
        for i, o in enumerate(outcomes):
            c.invoke_async_callback(peer.addr, _req(i), 20_000, o)
    finally:
        c.close()
    for o in outcomes:
        assert isinstance(o.error(), ConnectError)
    peer.join()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # (3.12: fork of a threaded process)
def test_a_forked_child_starts_clients_on_an_io_thread_of_its_own(echo_addr: str) -> None:
    """The child of a process whose I/O thread runs gets its own (the parent's thread does
    not exist in the child, and its epoll descriptor is the parent's kernel object)."""
    with RemotingClient(name="parent") as parent:
        assert parent.invoke_sync(echo_addr, _req(1), 5000).body == b"body-1"
        pid = os.fork()
        if pid == 0:  # the child: exit 0 only if a fresh client works
            code = 1
            try:
                with RemotingClient(name="child") as child:
                    ok = child.invoke_sync(echo_addr, _req(2), 5000).body == b"body-2"
                    fut = child.invoke_async(echo_addr, _req(3), 5000)
                    ok = ok and fut.result(5).body == b"body-3"
                    code = 0 if ok else 2
            finally:
                os._exit(code)
        deadline = time.monotonic() + 20
        status = None
        while time.monotonic() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.02)
        else:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail("the forked child hung")
        assert status is not None and os.waitstatus_to_exitcode(status) == 0
        # the parent's client is undisturbed
        assert parent.invoke_sync(echo_addr, _req(4), 5000).body == b"body-4"


def test_a_sync_call_of_a_callback_allowing_hand_off_moves_the_io_loop(echo_addr: str) -> None:
    """A callback run with ``run_allowing_hand_off`` (a push consumer's listener run on the
    I/O thread) makes a sync call: a new thread takes over the I/O loop at once and serves
    every other call while the old one waits, which leaves the loop once its callback
    returns; a plain callback's sync call still raises."""
    with RemotingClient(name="handoff") as c:
        reactor = c._reactor
        assert reactor is not None
        first_ident = reactor.ident
        release = threading.Event()
        seen: dict[str, object] = {}
        done = threading.Event()

        def blocking() -> None:
            seen["before"] = threading.current_thread().name
            seen["answer"] = c.invoke_sync(echo_addr, _req(1), 5000).body
            seen["after"] = threading.current_thread().name
            release.wait(10)  # still busy: the other calls must not wait for it

        def callback(response: RemotingCommand | None, error: BaseException | None) -> None:
            try:
                run_allowing_hand_off(blocking)
            finally:
                done.set()

        c.invoke_async_callback(echo_addr, _req(0), 5000, callback)
        wait_until(lambda: "after" in seen)
        assert seen == {
            "before": IO_THREAD_NAME,
            "answer": b"body-1",
            "after": f"{IO_THREAD_NAME}-handed-off",
        }
        assert reactor.hand_offs == 1
        # the old thread is still in its callback, and the new one answers the others
        others = [Outcomes() for _ in range(5)]
        for i, o in enumerate(others):
            c.invoke_async_callback(echo_addr, _req(10 + i), 5000, o)
        for i, o in enumerate(others):
            assert o.event.wait(5)
            ((response, error, thread),) = o.calls
            assert error is None and response is not None and response.body == f"body-{10 + i}".encode()
            assert thread == IO_THREAD_NAME
        assert reactor.ident not in (None, first_ident)
        assert not done.is_set()
        release.set()
        assert done.wait(5)
        # the old thread left the loop: one I/O thread is left, and it still serves
        wait_until(lambda: len(_io_threads()) == 1)
        assert c.invoke_sync(echo_addr, _req(20), 5000).body == b"body-20"

        # a callback not run with run_allowing_hand_off: the sync call still refuses
        plain: list[BaseException] = []
        plain_done = threading.Event()

        def plain_callback(response: RemotingCommand | None, error: BaseException | None) -> None:
            try:
                c.invoke_sync(echo_addr, _req(30), 5000)
            except ClientError as exc:
                plain.append(exc)
            finally:
                plain_done.set()

        c.invoke_async_callback(echo_addr, _req(31), 5000, plain_callback)
        assert plain_done.wait(5)
        assert len(plain) == 1 and reactor.hand_offs == 1
    assert not _io_threads()


def test_closing_the_last_client_after_a_hand_off_joins_the_new_io_thread(echo_addr: str) -> None:
    """The client closed from the handed-off thread's own callback: the new I/O thread stops
    and is joined; nothing is left running."""
    c = RemotingClient(name="handoff-close")
    c.start()
    closed = threading.Event()

    def callback(response: RemotingCommand | None, error: BaseException | None) -> None:
        def work() -> None:
            c.invoke_sync(echo_addr, _req(1), 5000)  # hands the loop off
            c.close()  # from the old thread: joins the new one

        try:
            run_allowing_hand_off(work)
        finally:
            closed.set()

    c.invoke_async_callback(echo_addr, _req(0), 5000, callback)
    assert closed.wait(10)
    wait_until(lambda: not _io_threads())


def test_after_a_hand_off_the_rest_of_the_read_and_the_queued_tasks_run_on_the_new_io_thread(
    echo_addr: str,
) -> None:
    """I/O callbacks run one at a time on the I/O thread: when one hands the loop off, the
    answers read with it and the tasks queued behind it are the new I/O thread's, not run
    by the old one after its callback (which here is still blocked)."""
    release = threading.Event()

    def script(sock: socket.socket, dec: FrameDecoder) -> None:
        first, second = read_frames(sock, dec, 2)
        # both answers in one read: the first one's callback hands off and blocks
        sock.sendall(first.make_response(0, body=b"a").encode() + second.make_response(0, body=b"b").encode())
        (sync,) = read_frames(sock, dec, 1)
        sock.sendall(sync.make_response(0, body=b"sync").encode())
        wait_eof(sock)

    peer = RawPeer(script)
    try:
        with RemotingClient(name="handoff-order") as c:
            reactor = c._reactor
            assert reactor is not None
            blocked = threading.Event()

            def first_callback(response: RemotingCommand | None, error: BaseException | None) -> None:
                def work() -> None:
                    assert c.invoke_sync(peer.addr, _req(3), 5000).body == b"sync"
                    blocked.set()
                    release.wait(10)

                run_allowing_hand_off(work)

            second = Outcomes()
            c.invoke_async_callback(peer.addr, _req(1), 5000, first_callback)
            c.invoke_async_callback(peer.addr, _req(2), 5000, second)
            assert blocked.wait(5)
            assert second.event.wait(5), "the second answer waited for the blocked callback"
            ((response, _error, thread),) = second.calls
            assert response is not None and response.body == b"b" and thread == IO_THREAD_NAME

            # tasks: the I/O thread held by a gate while two are queued behind it
            gate = threading.Event()
            task_threads: list[str] = []
            second_task = threading.Event()

            def guarded_task() -> None:
                def work() -> None:
                    c.invoke_sync(echo_addr, _req(4), 5000)  # hands off
                    release.wait(10)

                run_allowing_hand_off(work)

            def plain_task() -> None:
                task_threads.append(threading.current_thread().name)
                second_task.set()

            reactor.on_io(lambda: gate.wait(10))
            reactor.on_io(guarded_task)
            reactor.on_io(plain_task)
            gate.set()
            assert second_task.wait(5), "the queued task waited for the blocked one"
            assert task_threads == [IO_THREAD_NAME] and reactor.hand_offs == 2
            release.set()
            c.close_connection(peer.addr)
    finally:
        release.set()
    peer.join()


def test_the_watchdog_hands_off_a_callback_that_holds_the_io_thread(echo_addr: str) -> None:
    """A callback run with ``run_allowing_hand_off`` that blocks without a sync call (it
    sleeps, or waits for an async call's future, whose answer only the I/O loop reads): the
    watchdog hands the loop to a new thread within two ``_STALL_S``, so the other calls are
    answered and the future completes; the watchdog ends once callbacks stop coming."""
    with RemotingClient(name="watchdog") as c:
        reactor = c._reactor
        assert reactor is not None
        release = threading.Event()
        seen: dict[str, object] = {}
        done = threading.Event()

        def holding() -> None:
            # an async call's answer waited for on the thread that would read it
            fut = c.invoke_async(echo_addr, _req(1), 5000)
            seen["answer"] = fut.result(5).body
            seen["after"] = threading.current_thread().name
            release.wait(10)

        def callback(response: RemotingCommand | None, error: BaseException | None) -> None:
            try:
                run_allowing_hand_off(holding)
            finally:
                done.set()

        c.invoke_async_callback(echo_addr, _req(0), 5000, callback)
        wait_until(lambda: "after" in seen, 5)
        assert seen == {"answer": b"body-1", "after": f"{IO_THREAD_NAME}-handed-off"}
        assert reactor.stalls == 1 and reactor.hand_offs == 1
        # the old thread still holds its callback; the new one answers the others at once
        started = time.monotonic()
        assert c.invoke_sync(echo_addr, _req(2), 5000).body == b"body-2"
        other = Outcomes()
        c.invoke_async_callback(echo_addr, _req(3), 5000, other)
        assert other.event.wait(5)
        assert time.monotonic() - started < 2
        assert other.calls[0][2] == IO_THREAD_NAME
        assert not done.is_set()
        release.set()
        assert done.wait(5)
        wait_until(lambda: len(_io_threads()) == 1)
        # a later watched callback starts the watchdog again; it ends once they stop coming
        quick = threading.Event()
        c.invoke_async_callback(echo_addr, _req(4), 5000, lambda r, e: run_allowing_hand_off(quick.set))
        assert quick.wait(5)
        wait_until(
            lambda: not [t for t in threading.enumerate() if t.name == "rocketq-remoting-watchdog"],
            10,
            "the idle watchdog to end",
        )
    assert not _io_threads()
