"""The import rules and the "spelled once" rules of the tree, checked on the source (AST).

* The floors: ``protocol`` imports no I/O floor; ``common`` sits on ``protocol`` only; the
  client never imports the broker or the name server and they never import the client;
  ``spark/`` imports nothing from ``remoting/`` (it uses ``rocketq.client.impl``).
* ``rocketq.client.consumer.pull`` is the pull consumer's module: other modules import
  only ``PullConsumer`` from it (shared plumbing lives in ``rocketq.client.impl``).
* ``rocketq.client.impl`` is thread-free: it never creates a thread.
* Each name of ``protocol/mixall.py`` (``MixAll``/``TopicValidator``) is defined there only,
  and its string values appear nowhere else as literals; sys-flag bits come from
  ``protocol/codes.py``; there is one ``ServiceThread`` and one scheduler.
"""

from __future__ import annotations

import ast
import pathlib
import re
import socket

import pytest

from rocketq.protocol import mixall

SRC = pathlib.Path(__file__).resolve().parents[2] / "src" / "rocketq"
TESTS = pathlib.Path(__file__).resolve().parents[1]


def _modules(root: pathlib.Path) -> list[tuple[str, ast.Module]]:
    out = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent if root == SRC else root).as_posix()
        out.append((rel, ast.parse(path.read_text(encoding="utf-8"), filename=str(path))))
    return out


SOURCES = _modules(SRC)


def _imports(tree: ast.Module) -> list[tuple[str, list[str]]]:
    """(module, names) of every import in the file, nested ones included."""
    out: list[tuple[str, list[str]]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.module, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            out.extend((a.name, []) for a in node.names)
    return out


def _imported_modules(tree: ast.Module) -> set[str]:
    mods = set()
    for module, names in _imports(tree):
        mods.add(module)
        mods.update(f"{module}.{n}" for n in names)
    return mods


def _violations(prefix: str, forbidden: tuple[str, ...]) -> list[str]:
    bad = []
    for rel, tree in SOURCES:
        if not rel.startswith(prefix):
            continue
        for mod in _imported_modules(tree):
            if any(mod == f or mod.startswith(f + ".") for f in forbidden):
                bad.append(f"{rel} imports {mod}")
    return bad


def test_the_scan_sees_the_tree() -> None:
    names = {rel for rel, _ in SOURCES}
    assert "rocketq/spark/client.py" in names
    assert "rocketq/client/impl/pull_api_wrapper.py" in names
    # the rule below really catches an import when one is there
    assert _violations("rocketq/client/impl/", ("rocketq.remoting",))


def test_floors() -> None:
    assert _violations("rocketq/protocol/", ("rocketq.remoting", "rocketq.client", "rocketq.broker")) == []
    assert _violations("rocketq/common/", ("rocketq.remoting", "rocketq.client", "rocketq.broker")) == []
    assert _violations("rocketq/client/", ("rocketq.broker", "rocketq.namesrv")) == []
    assert _violations("rocketq/broker/", ("rocketq.client",)) == []
    assert _violations("rocketq/namesrv/", ("rocketq.client", "rocketq.broker")) == []


def test_spark_imports_nothing_from_remoting() -> None:
    assert _violations("rocketq/spark/", ("rocketq.remoting",)) == []


def test_only_the_pull_consumer_comes_from_the_pull_module() -> None:
    bad = []
    for rel, tree in [*SOURCES, *_modules(TESTS)]:
        for module, names in _imports(tree):
            if module == "rocketq.client.consumer.pull" and set(names) != {"PullConsumer"}:
                bad.append(f"{rel}: {names}")
            if module == "rocketq.client.consumer" and "pull" in names:
                bad.append(f"{rel}: imports the module")
    assert bad == []


def test_the_client_core_starts_no_thread() -> None:
    bad = []
    for rel, tree in SOURCES:
        if not rel.startswith("rocketq/client/impl/"):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in {"Thread", "ThreadPoolExecutor", "Timer"}:
                bad.append(f"{rel}:{node.lineno} {node.attr}")
    assert bad == []


def _assigned_names(tree: ast.Module) -> list[tuple[str, int]]:
    out = []
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign):
            targets = [node.target]
        out.extend((t.id, node.lineno) for t in targets if isinstance(t, ast.Name))
    return out


def test_mixall_names_are_defined_once() -> None:
    names = set(mixall.__all__)
    values = {v for n in mixall.__all__ if isinstance(v := getattr(mixall, n), str)}
    assert {"SCHEDULE_TOPIC_XXXX", "OFFSET_MOVED_EVENT", "TBW102", "TOOLS_CONSUMER"} <= values
    bad = []
    for rel, tree in SOURCES:
        if rel == "rocketq/protocol/mixall.py":
            continue
        for name, line in _assigned_names(tree):
            if name.lstrip("_") in names or re.fullmatch(
                r"_?(MASTER_ID|SCHEDULE_TOPIC|OFFSET_MOVED_EVENT)", name
            ):
                bad.append(f"{rel}:{line} defines {name}")
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in values:
                bad.append(f"{rel}:{node.lineno} spells {node.value!r}")
    assert bad == []


def test_sys_flag_bits_come_from_codes() -> None:
    """No module but ``protocol/codes.py`` writes a sys-flag bit as a number."""
    pattern = re.compile(r"_?(TRANSACTION\w*|PREPARED|ROLLBACK|COMPRESSED|\w*V6\w*|FLAG_UNIT\w*)")
    bad = []
    for rel, tree in SOURCES:
        if rel == "rocketq/protocol/codes.py":
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Constant):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    if (
                        isinstance(t, ast.Name)
                        and pattern.fullmatch(t.id)
                        and isinstance(node.value.value, int)
                    ):
                        bad.append(f"{rel}:{node.lineno} {t.id} = {node.value.value}")
    assert bad == []


def test_one_service_thread_and_one_scheduler() -> None:
    defined: dict[str, list[str]] = {}
    for rel, tree in SOURCES:
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.name in {
                "ServiceThread",
                "PeriodicService",
                "ScheduledExecutor",
                "TaskScheduler",
            }:
                defined.setdefault(node.name, []).append(rel)
    assert defined == {
        "ServiceThread": ["rocketq/common/service_thread.py"],
        "PeriodicService": ["rocketq/common/service_thread.py"],
        "ScheduledExecutor": ["rocketq/common/scheduler.py"],
    }


def test_the_unit_tier_refuses_tcp() -> None:
    """tests/unit/conftest.py keeps socket tests out of this tier (they live in tests/component)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        with pytest.raises(AssertionError, match="tests/component"):
            sock.connect(("127.0.0.1", 9))
        with pytest.raises(AssertionError, match="tests/component"):
            sock.bind(("127.0.0.1", 0))


def test_one_place_builds_a_pull_request() -> None:
    """``PullMessageRequestHeader(...)`` is built in PullAPIWrapper only (the broker decodes it)."""
    built = []
    for rel, tree in SOURCES:
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "PullMessageRequestHeader"
            ):
                built.append(rel)
    assert built == ["rocketq/client/impl/pull_api_wrapper.py"]


def test_one_place_turns_a_route_into_queues() -> None:
    """``topicRouteData2TopicSubscribeInfo`` is written once: no other client, admin or Spark
    module makes MessageQueues out of a QueueData's ``read_queue_nums``."""
    pattern = re.compile(r"MessageQueue\([^)]*\bi\)\s+for i in range\(\w+\.read_queue_nums\)")
    walkers = sorted(
        rel
        for rel, tree in SOURCES
        if rel.startswith(("rocketq/client/", "rocketq/spark/", "rocketq/admin/"))
        and pattern.search(ast.unparse(tree))
    )
    assert walkers == ["rocketq/client/impl/topic_route.py"]
