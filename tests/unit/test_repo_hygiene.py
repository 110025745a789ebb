"""A fresh clone runs its tests on its own: the golden captures come from tests/golden, never
from ../shared, and the rocketq fixtures reach pytest through the plugin entry point (issue #20)."""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

import pytest

from tests.conftest import golden_dir

_REPO = Path(__file__).resolve().parents[2]


def test_golden_dir_is_inside_the_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ROCKETQ_GOLDEN", raising=False)
    path = golden_dir().resolve()
    assert path.is_relative_to(_REPO) and path == _REPO / "tests" / "golden"
    assert any(path.glob("*.jsonl"))


def test_no_test_reads_the_shared_folder() -> None:
    # a path to the shared folder in code (a docstring may still mention where a doc lives)
    pattern = re.compile(r"""shared/golden|["']\.\./shared|["']/work/shared|/\s*["']shared["']""")
    offenders = [
        str(p.relative_to(_REPO))
        for root in ("tests", "src", "benchmarks")
        for p in (_REPO / root).rglob("*.py")
        if p.resolve() != Path(__file__).resolve() and pattern.search(p.read_text(encoding="utf-8"))
    ]
    assert offenders == []
    assert not re.search(r"\.\./shared|/work/shared", (_REPO / "Makefile").read_text(encoding="utf-8"))


def test_fixtures_are_a_pytest_plugin(pytester: pytest.Pytester) -> None:
    points = {ep.name: ep.value for ep in importlib.metadata.entry_points(group="pytest11")}
    assert points.get("rocketq") == "rocketq.testing.fixtures"
    pytester.makepyfile(
        """
        def test_names(unique_name):
            assert unique_name("orders") != unique_name("orders")
        """
    )
    # a project of its own, without rocketq's conftest: the fixture comes from the entry point
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
