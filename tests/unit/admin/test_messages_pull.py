"""The admin's own pulls carry ``bname``, as the Java 4.9.5+ pull path sets it."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from rocketq.admin import messages
from rocketq.client.api_results import PullStatus
from rocketq.protocol.codes import SerializeType


class _Client:
    def __init__(self) -> None:
        self.headers: list[Any] = []

    def pull_message_sync(self, addr: str, header: Any, timeout_ms: int) -> Any:
        self.headers.append(header)
        return SimpleNamespace(pull_status=PullStatus.NO_NEW_MSG, next_begin_offset=7, message_binary=b"")


def test_admin_pull_names_the_broker() -> None:
    client = _Client()
    admin: Any = SimpleNamespace(client=client, timeout_ms=3000)
    status, next_offset, msgs = messages._pull(admin, "127.0.0.1:10911", "broker-a", "T", 2, 5, 1)
    assert (status, next_offset, msgs) == (PullStatus.NO_NEW_MSG, 7, [])
    (header,) = client.headers
    assert (header.topic, header.queue_id, header.queue_offset, header.bname) == ("T", 2, 5, "broker-a")
    assert header.to_ext_fields(serialize_type=SerializeType.JSON)["bname"] == "broker-a"
