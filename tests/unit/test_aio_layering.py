"""rocketq.aio's own rules, checked on the source: it starts no thread (everything is a task of
the caller's loop: no Thread, no executor, no ``to_thread``/``run_in_executor``), never imports
the broker or the name server, and builds no pull header or send header of its own (those come
from the shared client core)."""

from __future__ import annotations

import ast

from tests.unit.test_layering import SOURCES, _violations


def test_aio_starts_no_thread() -> None:
    bad = []
    forbidden = {"Thread", "ThreadPoolExecutor", "Timer", "to_thread", "run_in_executor"}
    for rel, tree in SOURCES:
        if rel.startswith("rocketq/aio/"):
            for node in ast.walk(tree):
                if isinstance(node, ast.Attribute) and node.attr in forbidden:
                    bad.append(f"{rel}:{node.lineno} {node.attr}")
                if isinstance(node, ast.Import) and any(a.name == "threading" for a in node.names):
                    bad.append(f"{rel}:{node.lineno} imports threading")
    assert [rel for rel, _ in SOURCES if rel.startswith("rocketq/aio/")], "the scan sees rocketq/aio"
    assert bad == []


def test_aio_floors_and_shared_builders() -> None:
    assert _violations("rocketq/aio/", ("rocketq.broker", "rocketq.namesrv", "rocketq.remoting.client")) == []
    bad = []
    for rel, tree in SOURCES:
        if rel.startswith("rocketq/aio/"):
            for node in ast.walk(tree):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Name)
                    and node.func.id in {"PullMessageRequestHeader", "SendMessageRequestHeader"}
                ):
                    bad.append(f"{rel}:{node.lineno} builds a {node.func.id}")
    assert bad == []
