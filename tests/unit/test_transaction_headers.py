"""The headers of transactions and request/reply against Java 4.9.7, field for field.

No golden capture holds END_TRANSACTION (37), CHECK_TRANSACTION_STATE (39) or
PUSH_REPLY_MESSAGE_TO_CLIENT (326), so the reference here is what Java does with the
header classes:

* the field tables are transcribed from ``EndTransactionRequestHeader``,
  ``CheckTransactionStateRequestHeader`` (both extend ``RpcRequestHeader``: ``bname``) and
  ``ReplyMessageRequestHeader`` of rocketmq-common 4.9.7: name, type, ``@CFNotNull``;
* ``makeCustomHeaderToNet`` puts every non-null field into a ``java.util.HashMap`` that
  fastjson writes in iteration order. The key orders below were printed by OpenJDK 17's
  ``HashMap`` filled with exactly these entries (a six-line Java program), not computed
  with rocketq's own ``hashmap_order``.
"""

from __future__ import annotations

import pytest

from rocketq.protocol.codes import LanguageCode, RequestCode
from rocketq.protocol.frame import RemotingCommand, decode_frame
from rocketq.protocol.headers import (
    REQUEST_HEADERS,
    CheckTransactionStateRequestHeader,
    CommandHeader,
    EndTransactionRequestHeader,
    JavaType,
    ReplyMessageRequestHeader,
)

STR, INT, LONG, BOOL = JavaType.STRING, JavaType.INT, JavaType.LONG, JavaType.BOOLEAN

#: (Java field, type, @CFNotNull) per class, from the 4.9.7 sources
JAVA_FIELDS: dict[type[CommandHeader], set[tuple[str, JavaType, bool]]] = {
    EndTransactionRequestHeader: {
        ("producerGroup", STR, True),
        ("tranStateTableOffset", LONG, True),
        ("commitLogOffset", LONG, True),
        ("commitOrRollback", INT, True),
        ("fromTransactionCheck", BOOL, False),
        ("msgId", STR, True),
        ("transactionId", STR, False),
        ("bname", STR, False),
    },
    CheckTransactionStateRequestHeader: {
        ("tranStateTableOffset", LONG, True),
        ("commitLogOffset", LONG, True),
        ("msgId", STR, False),
        ("transactionId", STR, False),
        ("offsetMsgId", STR, False),
        ("bname", STR, False),
    },
    ReplyMessageRequestHeader: {
        ("producerGroup", STR, True),
        ("topic", STR, True),
        ("defaultTopic", STR, True),
        ("defaultTopicQueueNums", INT, True),
        ("queueId", INT, True),
        ("sysFlag", INT, True),
        ("bornTimestamp", LONG, True),
        ("flag", INT, True),
        ("properties", STR, False),
        ("reconsumeTimes", INT, False),
        ("unitMode", BOOL, False),
        ("bornHost", STR, True),
        ("storeHost", STR, True),
        ("storeTimestamp", LONG, True),
    },
}


@pytest.mark.parametrize("cls", list(JAVA_FIELDS), ids=lambda c: c.__name__)
def test_fields_match_the_java_class(cls: type[CommandHeader]) -> None:
    ours = {(wf.wire, wf.java_type, wf.required) for wf in cls.wire_fields()}
    assert ours == JAVA_FIELDS[cls]


def test_request_codes_map_to_these_headers() -> None:
    assert REQUEST_HEADERS[RequestCode.END_TRANSACTION] is EndTransactionRequestHeader
    assert REQUEST_HEADERS[RequestCode.CHECK_TRANSACTION_STATE] is CheckTransactionStateRequestHeader
    assert REQUEST_HEADERS[RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT] is ReplyMessageRequestHeader


def _end_check() -> EndTransactionRequestHeader:
    return EndTransactionRequestHeader(
        producer_group="PG",
        tran_state_table_offset=7,
        commit_log_offset=4242,
        commit_or_rollback=8,
        from_transaction_check=True,
        msg_id="7F0000010000000000000000AB",
        transaction_id="TX1",
        bname="broker-a",
    )


END_CHECK_JSON = (
    '{"code":37,"extFields":{"producerGroup":"PG","bname":"broker-a","commitLogOffset":"4242",'
    '"msgId":"7F0000010000000000000000AB","tranStateTableOffset":"7","commitOrRollback":"8",'
    '"transactionId":"TX1","fromTransactionCheck":"true"},"flag":2,"language":"JAVA","opaque":5,'
    '"remark":"checkLocalTransactionState Exception: boom","serializeTypeCurrentRPC":"JSON","version":407}'
)


def test_end_transaction_from_check_frame() -> None:
    cmd = RemotingCommand(
        code=RequestCode.END_TRANSACTION,
        flag=2,
        opaque=5,
        language=LanguageCode.JAVA,
        version=407,
        remark="checkLocalTransactionState Exception: boom",
        ext_fields=_end_check().to_ext_fields(),
    )
    assert cmd.encode_header().decode() == END_CHECK_JSON
    back = decode_frame(cmd.encode())
    assert EndTransactionRequestHeader.from_ext_fields(back.ext_fields) == _end_check()


def test_end_transaction_after_send_sends_from_check_false_and_no_transaction_id() -> None:
    # endTransaction: Boolean fromTransactionCheck = false is always written; the
    # broker's send answer has no transactionId, so the key is absent
    header = EndTransactionRequestHeader(
        producer_group="PG",
        tran_state_table_offset=3,
        commit_log_offset=99,
        commit_or_rollback=12,
        msg_id="M",
    )
    assert list(header.to_ext_fields().items()) == [
        ("producerGroup", "PG"),
        ("commitLogOffset", "99"),
        ("msgId", "M"),
        ("tranStateTableOffset", "3"),
        ("commitOrRollback", "12"),
        ("fromTransactionCheck", "false"),
    ]
    assert header.missing_required() == []
    assert EndTransactionRequestHeader.from_ext_fields({"producerGroup": "PG"}).missing_required() == [
        "tranStateTableOffset",
        "commitLogOffset",
        "commitOrRollback",
        "msgId",
    ]


def test_check_transaction_state_order() -> None:
    header = CheckTransactionStateRequestHeader(
        tran_state_table_offset=7,
        commit_log_offset=4242,
        msg_id="MID",
        transaction_id="MID",
        offset_msg_id="OFF",
        bname="broker-a",
    )
    ext = header.to_ext_fields()
    assert list(ext) == [
        "bname",
        "commitLogOffset",
        "msgId",
        "tranStateTableOffset",
        "offsetMsgId",
        "transactionId",
    ]
    assert CheckTransactionStateRequestHeader.from_ext_fields(ext) == header


def test_reply_message_order() -> None:
    header = ReplyMessageRequestHeader(
        producer_group="PG",
        topic="DefaultCluster_REPLY_TOPIC",
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=0,
        sys_flag=0,
        born_timestamp=1700000000000,
        flag=0,
        properties="P",
        reconsume_times=0,
        born_host="127.0.0.1:50000",
        store_host="127.0.0.1:10911",
        store_timestamp=1700000000123,
    )
    ext = header.to_ext_fields()
    assert list(ext.items()) == [
        ("queueId", "0"),
        ("flag", "0"),
        ("sysFlag", "0"),
        ("reconsumeTimes", "0"),
        ("storeTimestamp", "1700000000123"),
        ("unitMode", "false"),
        ("defaultTopic", "TBW102"),
        ("bornHost", "127.0.0.1:50000"),
        ("defaultTopicQueueNums", "4"),
        ("producerGroup", "PG"),
        ("topic", "DefaultCluster_REPLY_TOPIC"),
        ("bornTimestamp", "1700000000000"),
        ("storeHost", "127.0.0.1:10911"),
        ("properties", "P"),
    ]
    assert ReplyMessageRequestHeader.from_ext_fields(ext) == header
