"""pytest fixtures over :class:`~rocketq.testing.cluster.EmbeddedCluster`.

* ``embedded_cluster`` (session scope): one name server + one broker shared by every test
  of the session; tests keep apart by using unique topic and group names.
* ``unique_name``: a factory ``unique_name(prefix="t") -> str`` of names that are valid
  topics and groups (``^[%|a-zA-Z0-9_-]+$``), unique per call and per test.

A pytest plugin: the ``pytest11`` entry point ``rocketq`` (pyproject.toml) loads this module in
every pytest run where rocketq is installed, so any project's tests (and rocketq's own) can
request both fixtures without importing anything.
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Callable, Iterator

import pytest

from rocketq.testing.cluster import EmbeddedCluster

__all__ = ["embedded_cluster", "unique_name"]

_counter = itertools.count(1)
_ILLEGAL = re.compile(r"[^a-zA-Z0-9_-]+")


@pytest.fixture(scope="session")
def embedded_cluster() -> Iterator[EmbeddedCluster]:
    """A started single-broker cluster for the whole test session."""
    with EmbeddedCluster() as cluster:
        yield cluster


@pytest.fixture
def unique_name(request: pytest.FixtureRequest) -> Callable[..., str]:
    """``unique_name(prefix="t")``: e.g. ``t_test_offsets_17_4f2a`` (<= 127 characters)."""
    test = _ILLEGAL.sub("_", request.node.name)[:60]
    salt = os.urandom(2).hex()

    def make(prefix: str = "t") -> str:
        return f"{_ILLEGAL.sub('_', prefix)}_{test}_{next(_counter)}_{salt}"[:127]

    return make
