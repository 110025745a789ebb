"""UPDATE_BROKER_CONFIG (25) on the processor, without sockets: the request Java's
``MQClientAPIImpl.updateBrokerConfig`` sends (no header, ``key=value`` lines) and the answers of
``AdminBrokerProcessor.updateBrokerConfig`` (plain SUCCESS: no extFields, no remark)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import cast

from rocketq.broker.broker import BrokerController
from rocketq.broker.config import load_updated_keys
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frame import RemotingCommand
from rocketq.remoting.server import Channel
from tests.unit.broker.conftest import unit_broker_config


class _Channel:
    remote_addr = "127.0.0.1:50001"
    local_addr = "127.0.0.1:10911"
    closed = False


def _update(broker: BrokerController, body: bytes) -> RemotingCommand:
    request = RemotingCommand.request(RequestCode.UPDATE_BROKER_CONFIG, None, body)
    response = asyncio.run(broker.admin_processor.process(cast(Channel, _Channel()), request))
    assert response is not None
    return response


def test_update_applies_live_keys_and_answers_plain_success(tmp_path: Path) -> None:
    broker = BrokerController(unit_broker_config(tmp_path))
    version = broker.configuration_version.counter
    topics_version = broker.topic_config_manager.data_version.counter
    ok = _update(broker, b"brokerPermission=4\nautoCreateSubscriptionGroup=false\nfileReservedTime=1\n")
    assert (ok.code, ok.remark, ok.ext_fields) == (ResponseCode.SUCCESS, None, None)
    assert broker.config.broker_permission == 4 and not broker.config.auto_create_subscription_group
    assert broker.store.config.file_reserved_time_hours == 1
    assert broker.subscription_group_manager.find_subscription_group_config("new-group") is None
    assert broker.configuration_version.counter == version + 1
    assert broker.topic_config_manager.data_version.counter == topics_version + 1  # brokerPermission
    assert load_updated_keys(str(tmp_path)) == {
        "brokerPermission": "4",
        "autoCreateSubscriptionGroup": "false",
        "fileReservedTime": "1",
    }


def test_empty_body_changes_nothing_and_bad_keys_change_nothing(tmp_path: Path) -> None:
    broker = BrokerController(unit_broker_config(tmp_path))
    config = broker.config
    assert _update(broker, b"").code == ResponseCode.SUCCESS
    for body, text in (
        (b"brokerPermission=4\nflushDiskTyp=SYNC_FLUSH\n", "unknown broker config key 'flushDiskTyp'"),
        (b"brokerPermission=4\nstorePathRootDir=/elsewhere\n", "storePathRootDir cannot change"),
        (b"maxMessageSize=-1\n", "max_message_size must be > 0"),
        (b"\xff\xfe=1", "string2Properties error"),
    ):
        refused = _update(broker, body)
        assert refused.code == ResponseCode.SYSTEM_ERROR and text in (refused.remark or ""), refused.remark
    assert broker.config is config and broker.configuration_version.counter == 0
    assert load_updated_keys(str(tmp_path)) == {}
