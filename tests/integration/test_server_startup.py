"""Starting a server where one already runs, or with bad settings: one ``error:`` line, exit 1,
and the running server's files untouched (issue #20: store lock, port in use, config keys).

Every server here is a real ``rocketq`` process on 127.0.0.1.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rocketq.testing.cluster import EmbeddedCluster

pytestmark = pytest.mark.integration

_TIMEOUT_S = 60


def _rocketq(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rocketq.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=_TIMEOUT_S,
        check=False,
    )


def _one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: "), proc.stderr
    assert "Traceback" not in proc.stderr
    return lines[0]


def _lock_is_held(path: Path) -> bool:
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    else:
        fcntl.lockf(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> EmbeddedCluster:
    with EmbeddedCluster(store_dir=tmp_path_factory.mktemp("live")) as cluster:
        yield cluster  # type: ignore[misc]


def test_second_server_on_a_live_store_is_refused(live: EmbeddedCluster) -> None:
    store = live.store_dir / live.broker_names[0]
    abort, lock = store / "abort", store / "lock"
    assert abort.exists() and _lock_is_held(lock)
    live.create_topic("before_refusal")  # writes config/topics.json
    topics = (store / "config" / "topics.json").read_bytes()

    # the same store through `server` (its own name server on another port) ...
    line = _one_error_line(
        _rocketq("server", "--namesrv-port", "0", "--broker-port", "0", "--store", str(store))
    )
    # (its name server starts first, and the live one holds the KV config's lock)
    assert "Lock failed, MQ already started" in line and str(store / "namesrv" / "kvConfig.json.lock") in line
    # ... and through `broker`, registering with the live name server
    line = _one_error_line(
        _rocketq("broker", "-n", live.namesrv_addr, "-p", "0", "--host", "127.0.0.1", "--store", str(store))
    )
    assert "Lock failed, MQ already started" in line and f"holds {lock}," in line

    # the live broker's abort marker, lock and config are untouched, and it still serves
    assert abort.exists()
    assert _lock_is_held(lock)
    assert (store / "config" / "topics.json").read_bytes() == topics
    addrs = [a for bd in live.cluster_info().broker_addr_table.values() for a in bd.broker_addrs.values()]
    assert addrs == live.broker_addrs
    live.create_topic("after_refusal")
    assert live.route("after_refusal") is not None


def test_port_in_use_is_one_line(live: EmbeddedCluster) -> None:
    port = live.namesrv_addr.rsplit(":", 1)[1]
    line = _one_error_line(
        _rocketq("namesrv", "--host", "127.0.0.1", "-p", port, "--kv-config", os.devnull + ".x")
    )
    assert "port already in use" in line and port in line
    # the broker's port, in `server` mode: its name server has started and must stop cleanly
    broker_port = live.broker_addrs[0].rsplit(":", 1)[1]
    store = live.store_dir / "other-store"
    line = _one_error_line(
        _rocketq(
            *("server", "--store", str(store), "--namesrv-port", "0", "--broker-port", broker_port),
            *("--log-level", "warning"),
        )
    )
    assert "port already in use" in line and broker_port in line


def test_unknown_set_key_names_the_known_keys(tmp_path: Path) -> None:
    line = _one_error_line(
        _rocketq(
            "server", "--store", str(tmp_path), "--namesrv-port", "0", "--set", "flushDiskTyp=SYNC_FLUSH"
        )
    )
    assert "flushDiskTyp" in line and "did you mean flushDiskType" in line and "storePathRootDir" in line
    assert not (tmp_path / "lock").exists()  # refused before anything started
    line = _one_error_line(
        _rocketq("broker", "--store", str(tmp_path), "--set", "autoCreateTopicEnable=ture")
    )
    assert "autoCreateTopicEnable" in line and "true or false" in line


def test_bad_log_level_is_a_usage_error(tmp_path: Path) -> None:
    proc = _rocketq("server", "--store", str(tmp_path), "--log-level", "verbose")
    assert proc.returncode == 2
    assert "--log-level" in proc.stderr and "DEBUG" in proc.stderr
