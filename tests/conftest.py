"""Shared fixtures: the golden captures of a real Apache RocketMQ 4.9.7 in tests/golden, and
the send request the tests that talk to a broker directly build."""

from __future__ import annotations

import base64
import importlib.metadata
import json
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from rocketq.client.impl.pull_api_wrapper import build_pull_sys_flag
from rocketq.protocol.codes import RequestCode, SerializeType
from rocketq.protocol.frame import FrameDecoder, RemotingCommand
from rocketq.protocol.headers import (
    PullMessageRequestHeader,
    SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
)

# embedded_cluster and unique_name come from the rocketq pytest plugin (the ``pytest11`` entry
# point of pyproject.toml, rocketq.testing.fixtures), as in any project that installs rocketq;
# importing them here too would register them twice. Only a checkout run without installing
# (PYTHONPATH=src) loads the module here. pytester runs the plugin's own test.
_PLUGIN_INSTALLED = any(ep.name == "rocketq" for ep in importlib.metadata.entry_points(group="pytest11"))
pytest_plugins = ["pytester"] if _PLUGIN_INSTALLED else ["pytester", "rocketq.testing.fixtures"]

_REPO = Path(__file__).resolve().parent.parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The tests marked ``own_io_thread`` run first, whatever was selected: they need a process
    whose remoting I/O thread no other client keeps alive, and the session's embedded cluster
    (``embedded_cluster``) keeps its admin client, and with it that thread, until the session
    ends. Under the compiled build, skip the tests marked ``pure_python``: they hand a compiled
    function a duck-typed fake or monkeypatch a method of a compiled class, which mypyc's native
    classes refuse. They run in ``make test``'s pure pass (``ROCKETQ_PURE_PYTHON=1``)."""
    from rocketq import _build

    items.sort(key=lambda item: item.get_closest_marker("own_io_thread") is None)  # stable
    if not _build.state().compiled:
        return
    skip = pytest.mark.skip(
        reason="pure_python test under the compiled build (runs with ROCKETQ_PURE_PYTHON=1)"
    )
    for item in items:
        if item.get_closest_marker("pure_python") is not None:
            item.add_marker(skip)


def golden_dir() -> Path:
    """``$ROCKETQ_GOLDEN`` or the captures vendored in ``tests/golden``; a missing folder fails
    loudly, never skips."""
    env = os.environ.get("ROCKETQ_GOLDEN")
    path = Path(env) if env else _REPO / "tests" / "golden"
    if not (path / "README.md").is_file():
        raise RuntimeError(f"golden captures not found at {path}: set ROCKETQ_GOLDEN or restore tests/golden")
    return path


@dataclass(frozen=True)
class GoldenFrame:
    file: str
    seq: int
    dir: str
    server: str
    code: int
    flag: int
    opaque: int
    serialize_type: str
    header: str
    body: bytes | None
    frame: bytes
    conn: int
    client: str

    @property
    def is_response(self) -> bool:
        return bool(self.flag & 1)


def load_golden_frames(name: str | None = None) -> list[GoldenFrame]:
    files = [golden_dir() / name] if name else sorted(golden_dir().glob("*.jsonl"))
    out: list[GoldenFrame] = []
    for path in files:
        with path.open() as fh:
            for line in fh:
                r = json.loads(line)
                out.append(
                    GoldenFrame(
                        file=path.name,
                        seq=r["seq"],
                        dir=r["dir"],
                        server=r["server"],
                        code=r["code"],
                        flag=r["flag"],
                        opaque=r["opaque"],
                        serialize_type=r["serialize_type"],
                        header=r["header"],
                        body=base64.b64decode(r["body_b64"]) if r["body_b64"] else None,
                        frame=base64.b64decode(r["frame_b64"]),
                        conn=r["conn"],
                        client=r.get("client", ""),
                    )
                )
    return out


@pytest.fixture(scope="session")
def golden() -> Path:
    return golden_dir()


def send_request(
    topic: str,
    body: bytes,
    *,
    queue_id: int = 0,
    properties: str = "",
    reconsume_times: int = 0,
    max_reconsume_times: int | None = None,
    code: RequestCode = RequestCode.SEND_MESSAGE_V2,
) -> RemotingCommand:
    """A send request as a Java producer builds it: SEND_MESSAGE with the V1 header, else
    (SEND_MESSAGE_V2, SEND_BATCH_MESSAGE) the one-letter V2 header; ``batch`` follows the code."""
    header = SendMessageRequestHeader(
        producer_group="test-producer",
        topic=topic,
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=queue_id,
        sys_flag=0,
        born_timestamp=int(time.time() * 1000),
        flag=0,
        properties=properties,
        reconsume_times=reconsume_times,
        max_reconsume_times=max_reconsume_times,
        batch=code == RequestCode.SEND_BATCH_MESSAGE,
    )
    fields = (
        header.to_ext_fields()
        if code == RequestCode.SEND_MESSAGE
        else SendMessageRequestHeaderV2.from_v1(header).to_ext_fields()
    )
    return RemotingCommand.request(code, fields, body)


def pull_request(
    topic: str, queue_id: int, offset: int, *, group: str, suspend: bool = True, hold_ms: int = 10_000
) -> RemotingCommand:
    """A PULL_MESSAGE of up to 32 messages with its subscription ("*", TAG: no heartbeat needed),
    no offset commit, SUSPEND as given (held up to ``hold_ms``), in the ROCKETMQ header type."""
    header = PullMessageRequestHeader(
        consumer_group=group,
        topic=topic,
        queue_id=queue_id,
        queue_offset=offset,
        max_msg_nums=32,
        sys_flag=build_pull_sys_flag(commit_offset=False, suspend=suspend, subscription=True),
        commit_offset=0,
        suspend_timeout_millis=hold_ms,
        subscription="*",
        sub_version=0,
        expression_type="TAG",
    )
    return RemotingCommand.request(
        RequestCode.PULL_MESSAGE,
        header.to_ext_fields(serialize_type=SerializeType.ROCKETMQ),
        serialize_type=SerializeType.ROCKETMQ,
    )


class RawWire:
    """One raw connection to a server at ``addr`` ("host:port"): frames numbered and written as
    given, answers read in order (the order of one connection's answers is observable)."""

    def __init__(self, addr: str) -> None:
        host, port = addr.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        self.decoder = FrameDecoder()
        self.opaque = 1000

    def close(self) -> None:
        self.sock.close()

    def frame(self, request: RemotingCommand) -> tuple[int, bytes]:
        self.opaque += 1
        request.opaque = self.opaque
        return self.opaque, request.encode()

    def read(self, count: int, timeout_s: float = 10.0) -> list[RemotingCommand]:
        got: list[RemotingCommand] = []
        deadline = time.monotonic() + timeout_s
        while len(got) < count:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"{len(got)} of {count} answers arrived: {got!r}")
            self.sock.settimeout(left)
            data = self.sock.recv(1 << 16)
            if not data:
                raise AssertionError("the broker closed the connection")
            got += self.decoder.feed(data)
        return got
