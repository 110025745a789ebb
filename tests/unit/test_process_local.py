"""``rocketq._process_local.ProcessLocal``: made once per process, by the first caller of
each process, whatever the threads; a forked child makes its own (the UNIQ_KEY generator:
a child must not hand out its parent's ids)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

import pytest

from rocketq._process_local import ProcessLocal
from rocketq.protocol.message_id import decode_unique_id, new_unique_id


def test_made_once_whatever_the_threads() -> None:
    made: list[int] = []
    gate = threading.Barrier(8)

    def factory() -> int:
        made.append(1)
        return len(made)

    local = ProcessLocal(factory)
    assert local.peek() is None
    got: list[int] = []

    def ask() -> None:
        gate.wait()
        got.append(local.get())

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert made == [1] and got == [1] * 8 and local.peek() == 1


def _in_child(check: Callable[[], bool]) -> int:
    """Fork; the child exits 0 if ``check()`` holds. The child's exit code."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            code = 0 if check() else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # (3.12: fork of a threaded process)
def test_a_forked_child_makes_its_own_value() -> None:
    local = ProcessLocal(lambda: ("made in", os.getpid()))
    parents = local.get()
    assert _in_child(lambda: local.peek() is None and local.get() == ("made in", os.getpid())) == 0
    assert local.get() is parents  # the parent's is untouched


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_a_forked_child_never_hands_out_its_parents_unique_ids() -> None:
    """The generator's prefix carries the pid and a random loader hash, its counter the ids
    handed out so far: a child that kept its parent's would repeat the parent's next ids."""
    parent_id = new_unique_id()
    parent = decode_unique_id(parent_id)
    assert parent.pid == os.getpid() & 0xFFFF

    def child_ids_are_its_own() -> bool:
        child_id = new_unique_id()
        child = decode_unique_id(child_id)
        return child.pid == os.getpid() & 0xFFFF and child_id[:-12] != parent_id[:-12]

    assert _in_child(child_ids_are_its_own) == 0
    assert new_unique_id()[:-12] == parent_id[:-12]  # the parent keeps its generator
