"""The admin's own pulls carry ``bname``, as the Java 4.9.5+ pull path sets it, and go through
the shared PullAPIWrapper with group TOOLS_CONSUMER, never committing."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from rocketq.admin import messages
from rocketq.client.api_results import FindBrokerResult, PullStatus
from rocketq.client.impl.pull_api_wrapper import PullAPIWrapper
from rocketq.protocol.codes import PullSysFlag, SerializeType
from rocketq.protocol.mixall import TOOLS_CONSUMER_GROUP


class _Client:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def pull_message_sync(self, addr: str, header: Any, timeout_ms: int) -> Any:
        self.calls.append((addr, header))
        return SimpleNamespace(pull_status=PullStatus.NO_NEW_MSG, next_begin_offset=7, message_binary=b"")


class _Host:
    def __init__(self, api: _Client) -> None:
        self.api = api

    def find_broker_address_in_subscribe(
        self, broker_name: str, broker_id: int, only: bool
    ) -> FindBrokerResult:
        assert broker_name == "broker-a"
        return FindBrokerResult("127.0.0.1:10911", False)

    def update_topic_route_info_from_name_server(self, topic: str) -> bool:
        raise AssertionError("the broker is known")


def test_admin_pull_names_the_broker() -> None:
    client = _Client()
    reader = PullAPIWrapper(_Host(client), TOOLS_CONSUMER_GROUP)
    admin: Any = SimpleNamespace(client=client, reader=reader, timeout_ms=3000)
    status, next_offset, msgs = messages._pull(admin, "broker-a", "T", 2, 5, 1)
    assert (status, next_offset, msgs) == (PullStatus.NO_NEW_MSG, 7, [])
    ((addr, header),) = client.calls
    assert addr == "127.0.0.1:10911"
    assert (header.topic, header.queue_id, header.queue_offset, header.bname) == ("T", 2, 5, "broker-a")
    assert header.to_ext_fields(serialize_type=SerializeType.JSON)["bname"] == "broker-a"
    assert header.consumer_group == TOOLS_CONSUMER_GROUP
    assert header.sys_flag == PullSysFlag.SUBSCRIPTION
    assert (header.commit_offset, header.subscription, header.expression_type) == (0, "*", "TAG")
