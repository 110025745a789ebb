"""``SendMessageProcessor`` on a broker that was never started (no sockets): retry-topic
sends and the queue they land in (``SendMessageProcessor.sendMessage`` +
``handleRetryAndDLQ``)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest

from rocketq.broker.broker import BrokerController
from rocketq.broker.processors.send import SendMessageProcessor
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frame import RemotingCommand
from rocketq.protocol.headers import SendMessageRequestHeader
from rocketq.remoting.server import Channel
from tests.unit.broker.conftest import unit_broker_config


class _Channel:
    remote_addr = "127.0.0.1:50001"
    local_addr = "127.0.0.1:10911"
    closed = False


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerController]:
    b = BrokerController(unit_broker_config(tmp_path))
    # as a consumer's heartbeat creates it (ClientManageProcessor): one queue, read-write
    b.topic_config_manager.create_topic_in_send_message_back_method("%RETRY%G", 1, 6, 0)
    b.store.start()
    yield b
    b.store.shutdown()


def _send(broker: BrokerController, topic: str, queue_id: int, reconsume_times: int) -> RemotingCommand:
    header = SendMessageRequestHeader(
        producer_group="P",
        topic=topic,
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=queue_id,
        sys_flag=0,
        born_timestamp=1_700_000_000_000,
        flag=0,
        properties="",
        reconsume_times=reconsume_times,
        max_reconsume_times=3,
    )
    request = RemotingCommand.request(RequestCode.SEND_MESSAGE, header.to_ext_fields(), b"body")
    response = asyncio.run(SendMessageProcessor(broker).process(cast(Channel, _Channel()), request))
    assert response is not None
    return response


@pytest.mark.parametrize("queue_id", [-1, 0])
def test_retry_topic_send_keeps_the_checked_queue(broker: BrokerController, queue_id: int) -> None:
    # A negative queueId is replaced by a random writable queue in msgCheck; the retry path
    # (handleRetryAndDLQ, not over its max) keeps that queue: %RETRY%G has only queue 0.
    response = _send(broker, "%RETRY%G", queue_id, reconsume_times=0)
    assert response.code == ResponseCode.SUCCESS
    assert response.ext_fields is not None and response.ext_fields["queueId"] == "0"
    assert broker.store.get_max_offset_in_queue("%RETRY%G", 0) == 1
    assert broker.store.find_consume_queue("%RETRY%G", -1) is None


def test_retry_topic_send_over_its_max_goes_to_the_dlq(broker: BrokerController) -> None:
    response = _send(broker, "%RETRY%G", -1, reconsume_times=3)
    assert response.code == ResponseCode.SUCCESS
    assert response.ext_fields is not None and response.ext_fields["queueId"] == "0"
    assert broker.store.get_max_offset_in_queue("%DLQ%G", 0) == 1
    assert broker.store.get_max_offset_in_queue("%RETRY%G", 0) == 0
