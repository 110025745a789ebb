"""Which build runs (``rocketq._build``): the mypyc-compiled hot set or pure Python, never a mix.

``make test`` runs the whole suite with the extensions built in place and sets
``ROCKETQ_EXPECT_BUILD=compiled``, then a fast subset with ``ROCKETQ_PURE_PYTHON=1`` and
``ROCKETQ_EXPECT_BUILD=pure``; :func:`test_the_expected_build_is_loaded` fails when the build loaded
is not the one CI meant to test. Subprocess tests prove the switch itself; the detection rules
(incomplete, stale, forced) run on a fake tree. Servers are real processes on 127.0.0.1.
"""

from __future__ import annotations

import ast
import importlib
import importlib.machinery
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rocketq import _build
from rocketq.common.event_loop import NO_UVLOOP_ENV
from rocketq.testing.waits import wait_until

_EXT = tuple(importlib.machinery.EXTENSION_SUFFIXES)
_PROBE = """
import importlib, json, sys
from rocketq import _build
mods = {m: importlib.import_module(m).__file__ for m in _build.HOT_MODULES}
print(json.dumps({"compiled": _build.state().compiled, "reason": _build.state().reason,
                  "files": mods, "shared_lib_loaded": _build.SHARED_LIB in sys.modules}))
"""


def _env(**overrides: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in (_build.PURE_ENV, NO_UVLOOP_ENV)}
    for key, value in overrides.items():
        if value is not None:
            env[key] = value
    return env


def _probe(**env: str | None) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE],
        env=_env(**env),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    result: dict[str, object] = json.loads(out.stdout)
    return result


def _version(**env: str | None) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "rocketq.cli.main", "--version"],
        env=_env(**env),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return out.stdout


def test_the_expected_build_is_loaded() -> None:
    """In this process: the decision and the modules actually loaded agree, and match what CI asked for."""
    state = _build.state()
    files = {m: str(importlib.import_module(m).__file__) for m in _build.HOT_MODULES}
    if state.compiled:
        assert all(f.endswith(_EXT) for f in files.values()), files
        assert str(importlib.import_module("rocketq.protocol.frame").__file__).endswith(_EXT)
        assert _build.SHARED_LIB in sys.modules
    else:
        assert all(f.endswith(".py") for f in files.values()), files
        assert _build.SHARED_LIB not in sys.modules
    expected = os.environ.get("ROCKETQ_EXPECT_BUILD")
    if expected:
        assert expected in ("compiled", "pure")
        assert state.compiled == (expected == "compiled"), state.describe()


def test_forced_pure_loads_every_hot_module_from_source() -> None:
    probe = _probe(ROCKETQ_PURE_PYTHON="1")
    assert probe["compiled"] is False
    assert probe["reason"] == f"forced by {_build.PURE_ENV}=1"
    files = probe["files"]
    assert isinstance(files, dict)
    assert all(str(f).endswith(".py") for f in files.values()), files
    assert str(files["rocketq.protocol.frame"]).endswith("frame.py")
    assert probe["shared_lib_loaded"] is False  # no mixed state: the compiled group never loads
    assert "build: pure Python (forced by ROCKETQ_PURE_PYTHON=1)" in _version(ROCKETQ_PURE_PYTHON="1")


def test_unforced_build_loads_the_extensions_when_they_are_built() -> None:
    state = _build.detect(environ={})
    probe = _probe()
    files = probe["files"]
    assert isinstance(files, dict)
    version = _version()
    if not state.compiled:  # a checkout without a valid build: pure, and says why
        assert probe["compiled"] is False
        assert all(str(f).endswith(".py") for f in files.values()), files
        assert f"build: pure Python ({state.reason})" in version
        return
    assert probe["compiled"] is True
    assert all(str(f).endswith(_EXT) for f in files.values()), files
    assert probe["shared_lib_loaded"] is True
    line = next(line for line in version.splitlines() if line.startswith("build: "))
    assert line.startswith(
        f"build: compiled with mypyc, {len(_build.HOT_MODULES)} of {len(_build.HOT_MODULES)}"
    )
    assert "protocol.frame" in line and "broker.store.commit_log" in line


def _fake_tree(tmp_path: Path, *, built: bool = True) -> Path:
    """A copy of the hot sources with (empty) extension files and a manifest, like a finished build."""
    root = tmp_path / "site"
    for module in _build.HOT_MODULES:
        target = _build.source_path(module, root)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(_build.source_path(module), target)
        if built:
            target.with_name(target.stem + _EXT[0]).write_bytes(b"")
    if built:
        (root / (_build.SHARED_LIB + _EXT[0])).write_bytes(b"")
        _build.write_manifest(root / "rocketq", root)
    return root


def test_detection_rules(tmp_path: Path) -> None:
    root = _fake_tree(tmp_path)
    assert _build.detect(environ={}, root=root) == _build.BuildState(True, "", True)
    forced = _build.detect(environ={_build.PURE_ENV: "1"}, root=root)
    assert (forced.compiled, forced.extensions_present) == (False, True)
    assert _build.detect(environ={_build.PURE_ENV: "0"}, root=root).compiled  # "0" does not force

    # an edited hot source makes the build stale: pure, naming the module
    edited = _build.source_path("rocketq.protocol.frame", root)
    edited.write_text(edited.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    stale = _build.detect(environ={}, root=root)
    assert not stale.compiled
    assert stale.reason == "stale compiled build, sources changed since: rocketq.protocol.frame"

    # one extension missing: pure for all (never a mix)
    root = _fake_tree(tmp_path / "b")
    _build.source_path("rocketq.broker.store.commit_log", root).with_suffix(_EXT[0]).unlink()
    missing = _build.detect(environ={}, root=root)
    assert not missing.compiled
    assert missing.reason == "incomplete compiled build, missing: rocketq.broker.store.commit_log"

    # no manifest, no shared library, nothing built
    root = _fake_tree(tmp_path / "c")
    (root / "rocketq" / _build.MANIFEST_NAME).unlink()
    assert "no readable" in _build.detect(environ={}, root=root).reason
    root = _fake_tree(tmp_path / "d")
    (root / (_build.SHARED_LIB + _EXT[0])).unlink()
    assert (
        _build.detect(environ={}, root=root).reason
        == f"incomplete compiled build, missing: {_build.SHARED_LIB}"
    )
    nothing = _build.detect(environ={}, root=_fake_tree(tmp_path / "e", built=False))
    assert nothing == _build.BuildState(False, "no compiled extensions built", False)


def test_no_interpreted_class_subclasses_a_hot_class() -> None:
    """mypyc refuses an interpreted subclass of a compiled class at import time: any subclass of a
    class defined in a hot module must itself be in the hot set."""
    src = _build.package_dir()
    hot_classes: set[str] = set()
    for module in _build.HOT_MODULES:
        tree = ast.parse(_build.source_path(module).read_text(encoding="utf-8"))
        hot_classes.update(node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef))
    offenders = []
    for path in src.rglob("*.py"):
        module = ".".join(path.relative_to(src.parent).with_suffix("").parts)
        if module in _build.HOT_MODULES:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases = {b.id for b in node.bases if isinstance(b, ast.Name)}
                bases |= {b.attr for b in node.bases if isinstance(b, ast.Attribute)}
                offenders += [f"{module}.{node.name}({base})" for base in bases & hot_classes]
    assert not offenders, offenders


@pytest.mark.parametrize("no_uvloop", [None, "1"])
def test_servers_report_their_event_loop_and_build(tmp_path: Path, no_uvloop: str | None) -> None:
    ready = tmp_path / "ready"
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "rocketq.cli.main", "namesrv", "--host", "127.0.0.1", "-p", "0"),
            *("--kv-config", str(tmp_path / "kv.json"), "--ready-file", str(ready)),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=_env(ROCKETQ_NO_UVLOOP=no_uvloop, ROCKETQ_PURE_PYTHON=os.environ.get(_build.PURE_ENV)),
    )
    try:
        wait_until(ready.exists, timeout_s=30, what="name server ready")
        line = json.loads(ready.read_text(encoding="utf-8"))
    finally:
        proc.terminate()
        proc.wait(timeout=15)
    uvloop_installed = importlib.util.find_spec("uvloop") is not None
    assert line["event_loop"] == ("uvloop" if uvloop_installed and no_uvloop is None else "asyncio")
    assert line["compiled"] is _build.state().compiled


def test_stray_extensions_are_those_of_modules_outside_the_hot_set(tmp_path: Path) -> None:
    root = _fake_tree(tmp_path)
    assert _build.stray_extensions(root) == []  # every hot module's extension belongs
    # a module that left the hot set keeps its extension from an earlier build: it would shadow the .py
    gone = root / "rocketq" / "client" / "consumer" / ("rebalance" + _EXT[0])
    gone.parent.mkdir(parents=True, exist_ok=True)
    gone.write_bytes(b"")
    assert _build.stray_extensions(root) == [gone]
    # the shared library sits next to the package, not in it: never a stray
    assert (root / (_build.SHARED_LIB + _EXT[0])).is_file()
    assert _build.stray_extensions(root, modules=()) == sorted(
        p for p in (root / "rocketq").rglob(f"*{_EXT[0]}")
    )


def test_a_source_edited_while_compiling_reads_as_stale(tmp_path: Path) -> None:
    root = _fake_tree(tmp_path)
    before = _build.source_digests(root)  # what the build hashes before mypyc reads the sources
    edited = _build.source_path("rocketq.protocol.frame", root)
    edited.write_text(edited.read_text(encoding="utf-8") + "\n# edited during the build\n", encoding="utf-8")
    _build.write_manifest(root / "rocketq", root, digests=before)  # written when the build ends
    stale = _build.detect(environ={}, root=root)
    assert not stale.compiled
    assert stale.reason == "stale compiled build, sources changed since: rocketq.protocol.frame"
