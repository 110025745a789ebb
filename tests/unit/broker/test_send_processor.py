"""``SendMessageProcessor`` on a broker that was never started (no sockets): retry-topic
sends and the queue they land in (``SendMessageProcessor.sendMessage`` +
``handleRetryAndDLQ``), and how a SEND_BATCH_MESSAGE is checked and stored
(``DefaultMessageStore.checkMessages``, ``CommitLog.MessageExtBatchEncoder``)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.broker.broker import BrokerController
from rocketq.broker.processors.pull import PullMessageProcessor
from rocketq.broker.processors.send import _ANSWER_LITERAL_ORDER, SendMessageProcessor, answer_ext_json
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frame import RemotingCommand, _json_flat_map
from rocketq.protocol.headers import PullMessageRequestHeader, SendMessageResponseHeader
from rocketq.protocol.message import MessageConst, decode_records
from rocketq.protocol.route import TopicConfig
from rocketq.remoting.server import Channel
from tests.conftest import send_request
from tests.unit.broker.conftest import unit_broker_config

# The processor is handed a duck-typed channel, which the compiled build refuses.
pytestmark = pytest.mark.pure_python


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


def _process(broker: BrokerController, request: RemotingCommand) -> RemotingCommand:
    response = asyncio.run(SendMessageProcessor(broker).process(cast(Channel, _Channel()), request))
    assert response is not None
    return response


def _send(broker: BrokerController, topic: str, queue_id: int, reconsume_times: int) -> RemotingCommand:
    request = send_request(
        topic,
        b"body",
        queue_id=queue_id,
        reconsume_times=reconsume_times,
        max_reconsume_times=3,
        code=RequestCode.SEND_MESSAGE,
    )
    return _process(broker, request)


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


# ---------------------------------------------------------------------- batches
#: the batch-level properties a broker appends to every entry (header ``i`` plus CLUSTER),
#: in the order the 4.9.7 broker writes them (see the golden store's batch records)
_BATCH_PROPS = "CLUSTER\x01DefaultCluster\x02WAIT\x01true"


def _entries(*items: tuple[bytes, str]) -> bytes:
    """A SEND_BATCH_MESSAGE body (``MessageDecoder.encodeMessages``) of (body, properties)."""
    out = b""
    for body, props in items:
        raw = props.encode()
        out += struct.pack(">iiiii", 20 + len(body) + 2 + len(raw), 0, 0, 0, len(body)) + body
        out += len(raw).to_bytes(2, "big") + raw
    return out


def _send_batch(broker: BrokerController, body: bytes) -> RemotingCommand:
    broker.topic_config_manager.update_topic_config(
        TopicConfig(topic_name="B", read_queue_nums=1, write_queue_nums=1)
    )
    request = send_request("B", body, properties="WAIT\x01true", code=RequestCode.SEND_BATCH_MESSAGE)
    return _process(broker, request)


def _stored_properties(broker: BrokerController) -> list[str]:
    result = broker.store.get_message("G", "B", 0, 0, 32)
    return [m.stored_properties for m in decode_records(b"".join(result.buffers))]


def test_batch_properties_get_a_separator_only_where_java_writes_one(broker: BrokerController) -> None:
    body = _entries(
        (b"a", "KEYS\x01k1\x02UNIQ_KEY\x01U1"),  # a 4.9.7 client: no trailing separator
        (b"b", "KEYS\x01k2\x02"),  # a client that keeps the trailing one: not doubled
        (b"c", ""),  # no properties: the batch's alone, no leading separator
    )
    assert _send_batch(broker, body).code == ResponseCode.SUCCESS
    assert _stored_properties(broker) == [
        "KEYS\x01k1\x02UNIQ_KEY\x01U1\x02" + _BATCH_PROPS,
        "KEYS\x01k2\x02" + _BATCH_PROPS,
        _BATCH_PROPS,
    ]


@pytest.fixture
def small_broker(tmp_path: Path) -> Iterator[BrokerController]:
    """A broker whose maxMessageSize is 1,000 bytes."""
    cfg = unit_broker_config(tmp_path)
    cfg = dataclasses.replace(
        cfg, message_store=dataclasses.replace(cfg.message_store, max_message_size=1_000)
    )
    b = BrokerController(cfg)
    b.store.start()
    yield b
    b.store.shutdown()


def test_batch_size_limit_counts_the_whole_encoded_batch(small_broker: BrokerController) -> None:
    # DefaultMessageStore.checkMessages holds the encoded batch (entry headers and
    # properties included) against maxMessageSize, not just the sum of the bodies
    broker = small_broker
    fits = _entries(*[(b"x" * 150, "") for _ in range(4)])  # 4 x 172 bytes encoded
    assert len(fits) <= 1_000
    assert _send_batch(broker, fits).code == ResponseCode.SUCCESS
    over = _entries(*[(b"x" * 190, "") for _ in range(5)])  # bodies 950, encoded 1,060
    assert len(over) > 1_000
    response = _send_batch(broker, over)
    assert response.code == ResponseCode.MESSAGE_ILLEGAL
    assert broker.store.get_max_offset_in_queue("B", 0) == 4  # nothing of it was stored


def test_a_property_value_holding_a_separator_is_message_illegal(broker: BrokerController) -> None:
    # Java's string2messageProperties keeps "\x01" inside a value; re-encoding it cannot be
    # done faithfully, so the broker refuses the message with MESSAGE_ILLEGAL (issue #21),
    # not SYSTEM_ERROR with a traceback, and stores nothing
    broker.topic_config_manager.create_topic_in_send_message_back_method("SepT", 1, 6, 0)
    request = send_request("SepT", b"body", properties="TAGS\x01a\x01b", code=RequestCode.SEND_MESSAGE)
    response = _process(broker, request)
    assert response.code == ResponseCode.MESSAGE_ILLEGAL
    assert response.remark is not None and "separator" in response.remark
    assert broker.store.get_max_offset_in_queue("SepT", 0) == 0


# ---------------------------------------------------------------------- read-only broker
@pytest.fixture
def read_only_broker(tmp_path: Path) -> Iterator[BrokerController]:
    """brokerPermission=4 (PERM_READ): a topic "N" and an ordered topic "O", 1 queue each."""
    b = BrokerController(dataclasses.replace(unit_broker_config(tmp_path), broker_permission=4))
    b.topic_config_manager.update_topic_config(
        TopicConfig(topic_name="N", read_queue_nums=1, write_queue_nums=1)
    )
    b.topic_config_manager.update_topic_config(
        TopicConfig(topic_name="O", read_queue_nums=1, write_queue_nums=1, order=True)
    )
    b.store.start()
    yield b
    b.store.shutdown()


def test_read_only_broker_refuses_only_ordered_topics(read_only_broker: BrokerController) -> None:
    # AbstractSendMessageProcessor.msgCheck (4.9.7): NO_PERMISSION only when the broker is not
    # writeable AND the topic is ordered; the remark names brokerIP1 without the port
    refused = _process(read_only_broker, send_request("O", b"body", queue_id=0))
    assert refused.code == ResponseCode.NO_PERMISSION
    assert refused.remark == "the broker[127.0.0.1] sending message is forbidden"
    assert read_only_broker.store.get_max_offset_in_queue("O", 0) == 0
    stored = _process(read_only_broker, send_request("N", b"body", queue_id=0))
    assert stored.code == ResponseCode.SUCCESS
    assert read_only_broker.store.get_max_offset_in_queue("N", 0) == 1


def test_write_only_broker_refuses_pulls_naming_its_ip(tmp_path: Path) -> None:
    # PullMessageProcessor (4.9.7): a broker without PERM_READ answers NO_PERMISSION, its remark
    # naming brokerIP1 (no port), before it looks at the topic
    b = BrokerController(dataclasses.replace(unit_broker_config(tmp_path), broker_permission=2))
    b.store.start()
    try:
        header = PullMessageRequestHeader(
            consumer_group="G",
            topic="N",
            queue_id=0,
            queue_offset=0,
            max_msg_nums=32,
            sys_flag=0,
            commit_offset=0,
            suspend_timeout_millis=0,
            sub_version=0,
        )
        request = RemotingCommand.request(RequestCode.PULL_MESSAGE, ext_fields=header.to_ext_fields())
        refused = PullMessageProcessor(b).process_request(
            cast(Channel, _Channel()), request, broker_allow_suspend=False
        )
        assert refused is not None
        assert refused.code == ResponseCode.NO_PERMISSION
        assert refused.remark == "the broker[127.0.0.1] pulling message is forbidden"
    finally:
        b.store.shutdown()


def test_json_send_answer_is_the_header_codecs_map_in_its_order(broker: BrokerController) -> None:
    # _answer builds the map literally (one dict); it must be what preSend + the header codec
    # (SendMessageResponseHeader over MSG_REGION/TRACE_ON, HashMap order) would write.
    response = _send(broker, "%RETRY%G", 0, reconsume_times=0)
    assert response.code == ResponseCode.SUCCESS and response.ext_fields is not None
    fields = response.ext_fields
    cfg = broker.config
    expected = SendMessageResponseHeader(msg_id=fields["msgId"], queue_id=0, queue_offset=0).to_ext_fields(
        {MessageConst.MSG_REGION: cfg.region_id, MessageConst.TRACE_ON: "true" if cfg.trace_on else "false"}
    )
    assert list(fields.items()) == list(expected.items())


def test_json_send_answer_frame_is_what_the_generic_encoder_writes(broker: BrokerController) -> None:
    # the answer carries its map pre-written (ext_json): the frame must be byte for byte what
    # the generic map encoder writes for the same command, and the map itself unchanged
    for _ in range(3):  # growing queue offsets
        response = _send(broker, "%RETRY%G", 0, reconsume_times=0)
        assert response.code == ResponseCode.SUCCESS and response.ext_json is not None
        generic = RemotingCommand(
            code=response.code,
            flag=response.flag,
            opaque=response.opaque,
            language=response.language,
            version=response.version,
            remark=response.remark,
            ext_fields=dict(response.ext_fields or {}),
            body=response.body,
            serialize_type=response.serialize_type,
        )
        assert generic.ext_json is None
        assert response.encode() == generic.encode()
        assert response == generic


_answer_text = st.text(st.characters(codec="utf-8"), max_size=40)
_digits = st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1).map(str)


@settings(max_examples=300, deadline=None)
@given(
    queue_id=_digits,
    trace_on=st.sampled_from(["true", "false"]),
    region=_answer_text,
    msg_id=st.one_of(_answer_text, st.binary(min_size=16, max_size=16).map(lambda b: b.hex().upper())),
    queue_offset=_digits,
)
def test_send_answer_template_is_the_generic_map_encoding(
    queue_id: str, trace_on: str, region: str, msg_id: str, queue_offset: str
) -> None:
    # answer_ext_json against the generic flat-map encoder over the map _answer builds (its
    # keys in _ANSWER_LITERAL_ORDER), and the whole frame with and without the cache
    ext = dict(zip(_ANSWER_LITERAL_ORDER, (queue_id, trace_on, region, msg_id, queue_offset), strict=True))
    template = answer_ext_json(queue_id, trace_on, region, msg_id, queue_offset)
    assert template == _json_flat_map(ext)
    assert json.loads(template) == ext
    plain = RemotingCommand(code=0, flag=1, opaque=7, remark=None, ext_fields=ext)
    cached = RemotingCommand(code=0, flag=1, opaque=7, remark=None, ext_fields=ext, ext_json=template)
    assert cached.encode() == plain.encode()
