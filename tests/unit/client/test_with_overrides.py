from __future__ import annotations

import pytest

from rocketq.client.config import ClientConfig, PushConsumerConfig, with_overrides
from rocketq.errors import IllegalArgumentError
from rocketq.protocol.heartbeat import MessageModel


def test_given_fields_replace_and_none_leaves_the_config_as_it_is() -> None:
    base = PushConsumerConfig(consumer_group="g1")
    assert with_overrides(base, consumer_group=None, message_model=None) is base
    changed = with_overrides(base, consumer_group="g2", message_model=MessageModel.BROADCASTING)
    assert (changed.consumer_group, changed.message_model) == ("g2", MessageModel.BROADCASTING)
    assert base.consumer_group == "g1"  # frozen: the original is untouched
    assert with_overrides(ClientConfig(), namesrv_addr="127.0.0.1:1").namesrv_addr == "127.0.0.1:1"


def test_an_override_is_validated_like_a_new_config() -> None:
    with pytest.raises(IllegalArgumentError):
        with_overrides(PushConsumerConfig(consumer_group="g1"), consumer_group="bad group name!")
