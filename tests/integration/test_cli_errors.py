"""The CLI's answers to a newcomer's mistakes (issue #20): a broker's port given as the name
server, a name server that knows no broker, a client message id queried without its topic,
and ``--version``. Real servers on 127.0.0.1; commands run in-process through ``main``."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator

import pytest

from rocketq import __version__
from rocketq.cli.main import main
from rocketq.testing.cluster import EmbeddedCluster
from rocketq.testing.waits import wait_until

pytestmark = pytest.mark.integration


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def lonely_namesrv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A name server with no broker registered."""
    tmp = tmp_path_factory.mktemp("lonely")
    ready = tmp / "ready"
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "rocketq.cli.main", "namesrv", "--host", "127.0.0.1", "-p", "0"),
            *("--kv-config", str(tmp / "kv.json"), "--ready-file", str(ready)),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until(ready.exists, timeout_s=30, what="name server ready")
        yield str(json.loads(ready.read_text())["namesrv"])
    finally:
        proc.terminate()
        proc.wait(timeout=15)


def test_broker_address_as_name_server(
    capsys: pytest.CaptureFixture[str], embedded_cluster: EmbeddedCluster
) -> None:
    broker = embedded_cluster.broker_addrs[0]
    for argv in (["cluster", "list"], ["topic", "route", "-t", "TopicTest"], ["topic", "list"]):
        code, out, err = _run(capsys, *argv, "-n", broker)
        assert code == 1 and out == ""
        assert err.count("\n") == 1 and f"{broker} is a broker, not a name server" in err, err


def test_no_broker_registered(capsys: pytest.CaptureFixture[str], lonely_namesrv: str) -> None:
    code, out, err = _run(capsys, "cluster", "list", "-n", lonely_namesrv)
    assert code == 1 and out == ""
    assert "no broker is registered with the name server" in err
    code, out, err = _run(capsys, "cluster", "ping", "-n", lonely_namesrv)
    assert code == 1 and "no broker is registered" in err
    code, _, err = _run(capsys, "message", "send", "-t", "TopicTest", "-p", "hi", "-n", lonely_namesrv)
    assert code == 1 and "No route info" in err and "no broker is registered" in err


def test_query_by_the_msg_id_send_printed(
    capsys: pytest.CaptureFixture[str], embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    topic = unique_name("q")
    embedded_cluster.create_topic(topic)
    ns = embedded_cluster.namesrv_addr
    code, out, err = _run(capsys, "message", "send", "-t", topic, "-p", "hello", "-n", ns, "--json")
    assert code == 0, err
    msg_id = json.loads(out)[0]["msg_id"]  # the client message id (UNIQ_KEY)
    code, out, err = _run(capsys, "message", "query", "-i", msg_id, "-n", ns)
    assert code == 1 and "add -t TOPIC" in err and "invalid port" not in err
    code, out, err = _run(
        capsys, "message", "query", "-i", msg_id, "-t", topic, "-n", ns, "--json", "--no-track"
    )
    assert code == 0, err
    assert json.loads(out)[0]["msg_id"] == msg_id


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.startswith(f"rocketq {__version__} ")
