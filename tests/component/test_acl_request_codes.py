"""Every request code the broker and the name server serve, and what ACL demands for it.

The expected tables below are the review point: a processor registered for a code that is
not listed here fails :func:`test_every_broker_code_is_classified`, so no new request type
reaches a secured broker before someone decides which permission it needs. Each code is
then pushed through the real validator with a signed non-admin account that owns no
resource, and the verdict must match the class (the message Java gives for it).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rocketq.acl import AclClientRPCHook, SessionCredentials, parse_plain_acl
from rocketq.acl.plain_access_validator import BROKER_CODE_RULES, CodeRule, PlainAccessValidator, namesrv_rule
from rocketq.broker.broker import BrokerController
from rocketq.broker.config import BrokerConfig
from rocketq.broker.store.config import MessageStoreConfig
from rocketq.namesrv.processor import HANDLED_CODES as NAMESRV_CODES
from rocketq.protocol.bodies import LockBatchRequestBody
from rocketq.protocol.codes import RequestCode as C
from rocketq.protocol.frame import RemotingCommand
from rocketq.protocol.heartbeat import ConsumerData, HeartbeatData, SubscriptionData
from rocketq.remoting.server import LoopThread

R, A, U = CodeRule.RESOURCES, CodeRule.ADMIN, CodeRule.AUTHENTICATED

#: What each broker code needs (Java's PlainAccessValidator.parse + Permission.ADMIN_CODE,
#: and rocketq's stricter additions, see rocketq.acl.plain_access_validator).
EXPECTED_BROKER: dict[int, CodeRule] = {
    C.SEND_MESSAGE: R,
    C.SEND_MESSAGE_V2: R,
    C.SEND_BATCH_MESSAGE: R,
    C.CONSUMER_SEND_MSG_BACK: R,
    C.PULL_MESSAGE: R,
    C.QUERY_MESSAGE: R,
    C.VIEW_MESSAGE_BY_ID: U,
    C.HEART_BEAT: R,
    C.UNREGISTER_CLIENT: R,
    C.CHECK_CLIENT_CONFIG: U,
    C.GET_CONSUMER_LIST_BY_GROUP: R,
    C.UPDATE_CONSUMER_OFFSET: R,
    C.QUERY_CONSUMER_OFFSET: R,
    C.LOCK_BATCH_MQ: R,
    C.UNLOCK_BATCH_MQ: R,
    C.UPDATE_AND_CREATE_TOPIC: A,
    C.DELETE_TOPIC_IN_BROKER: A,
    C.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: A,
    C.DELETE_SUBSCRIPTIONGROUP: A,
    C.UPDATE_BROKER_CONFIG: A,
    C.INVOKE_BROKER_TO_RESET_OFFSET: A,
    C.GET_ALL_TOPIC_CONFIG: U,
    C.GET_BROKER_CONFIG: U,
    C.SEARCH_OFFSET_BY_TIMESTAMP: U,
    C.GET_MAX_OFFSET: U,
    C.GET_MIN_OFFSET: U,
    C.GET_EARLIEST_MSG_STORETIME: U,
    C.GET_BROKER_RUNTIME_INFO: U,
    C.GET_ALL_SUBSCRIPTIONGROUP_CONFIG: U,
    C.GET_TOPIC_STATS_INFO: U,
    C.GET_CONSUMER_CONNECTION_LIST: U,
    C.GET_PRODUCER_CONNECTION_LIST: U,
    C.GET_CONSUME_STATS: U,
    C.QUERY_TOPIC_CONSUME_BY_WHO: U,
    C.GET_CONSUMER_RUNNING_INFO: U,
    C.CONSUME_MESSAGE_DIRECTLY: A,
    C.CLONE_GROUP_OFFSET: A,
    C.INVOKE_BROKER_TO_GET_CONSUMER_STATUS: U,
    C.VIEW_BROKER_STATS_DATA: U,
    C.END_TRANSACTION: U,
    C.SEND_REPLY_MESSAGE: U,
    C.SEND_REPLY_MESSAGE_V2: U,
}

#: Name-server codes: reads open, everything else admin (rocketq; Java has no name-server ACL).
EXPECTED_NAMESRV: dict[int, CodeRule] = {
    C.PUT_KV_CONFIG: A,
    C.DELETE_KV_CONFIG: A,
    C.REGISTER_BROKER: A,
    C.UNREGISTER_BROKER: A,
    C.WIPE_WRITE_PERM_OF_BROKER: A,
    C.ADD_WRITE_PERM_OF_BROKER: A,
    C.DELETE_TOPIC_IN_NAMESRV: A,
    C.UPDATE_NAMESRV_CONFIG: A,
    C.GET_KV_CONFIG: CodeRule.OPEN,
    C.QUERY_DATA_VERSION: CodeRule.OPEN,
    C.GET_ROUTEINFO_BY_TOPIC: CodeRule.OPEN,
    C.GET_BROKER_CLUSTER_INFO: CodeRule.OPEN,
    C.GET_ALL_TOPIC_LIST_FROM_NAMESERVER: CodeRule.OPEN,
    C.GET_KVLIST_BY_NAMESPACE: CodeRule.OPEN,
    C.GET_TOPICS_BY_CLUSTER: CodeRule.OPEN,
    C.GET_SYSTEM_TOPIC_LIST_FROM_NS: CodeRule.OPEN,
    C.GET_UNIT_TOPIC_LIST: CodeRule.OPEN,
    C.GET_HAS_UNIT_SUB_TOPIC_LIST: CodeRule.OPEN,
    C.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST: CodeRule.OPEN,
    C.GET_NAMESRV_CONFIG: CodeRule.OPEN,
}

ACCOUNTS = parse_plain_acl(
    {
        "accounts": [
            {
                "accessKey": "nobody01",
                "secretKey": "secret01",
                "defaultTopicPerm": "DENY",
                "defaultGroupPerm": "DENY",
            }
        ]
    }
)


@pytest.fixture(scope="module")
def broker_codes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[frozenset[int]]:
    """The codes a real broker registers once started (no name server, OS-assigned port)."""
    root: Path = tmp_path_factory.mktemp("acl-codes")
    config = BrokerConfig(
        listen_port=0,
        message_store=MessageStoreConfig(store_path_root_dir=str(root), mapped_file_size_commit_log=1 << 20),
    )
    broker = BrokerController(config)
    with LoopThread(broker.start, broker.shutdown, name="acl-codes-broker"):
        yield broker.server.registered_codes


def test_every_broker_code_is_classified(broker_codes: frozenset[int]) -> None:
    unlisted = sorted(int(c) for c in broker_codes if c not in EXPECTED_BROKER)
    assert not unlisted, f"request codes served without an ACL decision: {unlisted}"
    for code in broker_codes:
        assert BROKER_CODE_RULES.get(code, A) is EXPECTED_BROKER[code], f"code {int(code)}"


def test_every_namesrv_code_is_classified() -> None:
    assert set(NAMESRV_CODES) == set(EXPECTED_NAMESRV)
    for code, rule in EXPECTED_NAMESRV.items():
        assert namesrv_rule(code) is rule, f"code {int(code)}"


def _request(code: int) -> RemotingCommand:
    """A plausible request of ``code`` naming topic T and group G."""
    ext = {"topic": "T", "b": "T", "a": "G", "group": "G", "consumerGroup": "G", "queueId": "0"}
    body = b""
    if code == C.HEART_BEAT:
        sub = SubscriptionData(topic="T")
        body = HeartbeatData(
            client_id="c", consumer_data_set=[ConsumerData(group_name="G", subscription_data_set=[sub])]
        ).to_json()
    elif code in (C.LOCK_BATCH_MQ, C.UNLOCK_BATCH_MQ):
        body = LockBatchRequestBody(consumer_group="G", client_id="c").to_json()
    request = RemotingCommand.request(code, ext, body)
    AclClientRPCHook(SessionCredentials("nobody01", "secret01"))(request)
    return request


@pytest.mark.parametrize(
    ("table", "rule_of"),
    [(EXPECTED_BROKER, None), (EXPECTED_NAMESRV, namesrv_rule)],
    ids=["broker", "namesrv"],
)
def test_verdict_of_every_code_for_an_account_without_permissions(
    table: dict[int, CodeRule], rule_of: object
) -> None:
    validator = (
        PlainAccessValidator(ACCOUNTS)
        if rule_of is None
        else PlainAccessValidator(ACCOUNTS, rule=namesrv_rule)
    )
    for code, rule in table.items():
        refusal = validator.check("10.9.9.9:1234", _request(code))
        remark = None if refusal is None else refusal.remark
        if rule in (U, CodeRule.OPEN):
            assert remark is None, f"code {int(code)}: {remark}"
        elif rule is A:
            assert remark is not None and "Need admin permission" in remark, f"code {int(code)}"
        else:
            assert remark is not None and "No default permission for" in remark, f"code {int(code)}"


def test_a_code_nobody_classified_needs_an_admin() -> None:
    unknown = max(int(c) for c in C) + 1
    refusal = PlainAccessValidator(ACCOUNTS).check("10.9.9.9:1", _request(unknown))
    assert refusal is not None and "Need admin permission" in (refusal.remark or "")


def test_tables_are_frozen() -> None:
    with pytest.raises(TypeError):
        BROKER_CODE_RULES[1] = A  # type: ignore[index]
