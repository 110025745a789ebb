"""plain_acl.yml loading, address patterns and PlainPermissionManager.validate semantics (pure)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketq.acl import AclClientRPCHook, AclConfigError, SessionCredentials, load_plain_acl, parse_plain_acl
from rocketq.acl.permission import DENY, PUB, SUB, check_permission, parse_perm
from rocketq.acl.plain_access_validator import PlainAccessValidator, namesrv_rule
from rocketq.acl.plain_permission_manager import PlainPermissionManager
from rocketq.acl.remote_address import address_matcher
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frame import RemotingCommand
from rocketq.protocol.heartbeat import ConsumerData, HeartbeatData, SubscriptionData

#: The sample distribution/conf/plain_acl.yml of Java 4.9.7 (its shape, our words).
SAMPLE = """
globalWhiteRemoteAddresses:
  - 10.10.103.*
  - 192.168.0.*

accounts:
  - accessKey: RocketMQ
    secretKey: 12345678
    whiteRemoteAddress:
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - topicA=DENY
      - topicB=PUB|SUB
      - topicC=SUB
    groupPerms:
      - groupA=DENY
      - groupB=PUB|SUB
      - groupC=SUB

  - accessKey: rocketmq2
    secretKey: 12345678
    whiteRemoteAddress: 192.168.1.*
    admin: true
"""


@pytest.fixture
def validator(tmp_path: Path) -> PlainAccessValidator:
    path = tmp_path / "plain_acl.yml"
    path.write_text(SAMPLE)
    return PlainAccessValidator(load_plain_acl(path))


def _signed(
    code: int, ext: dict[str, str], body: bytes = b"", *, key: str = "RocketMQ", secret: str = "12345678"
) -> RemotingCommand:
    request = RemotingCommand.request(code, dict(ext), body)
    AclClientRPCHook(SessionCredentials(key, secret))(request)
    return request


def _remark(
    validator: PlainAccessValidator, request: RemotingCommand, addr: str = "127.0.0.1:5555"
) -> str | None:
    refusal = validator.check(addr, request)
    if refusal is None:
        return None
    assert refusal.code == ResponseCode.SYSTEM_ERROR
    assert refusal.remark is not None
    assert refusal.remark.startswith("org.apache.rocketmq.acl.common.AclException: ")
    return refusal.remark


def test_sample_file_loads_with_java_semantics(validator: PlainAccessValidator) -> None:
    data = validator.data
    user = data.accounts["RocketMQ"]
    assert user.secret_key == "12345678"  # an int in YAML, text as fastjson makes it
    assert user.resource_perms == {
        "topicA": DENY,
        "topicB": PUB | SUB,
        "topicC": SUB,
        "%RETRY%groupA": DENY,
        "%RETRY%groupB": PUB | SUB,
        "%RETRY%groupC": SUB,
    }
    assert (user.default_topic_perm, user.default_group_perm, user.admin) == (DENY, SUB, False)
    assert data.accounts["rocketmq2"].admin
    assert "12345678" not in repr(user)


@pytest.mark.parametrize(
    ("text", "perm"),
    [
        ("PUB", PUB),
        ("SUB", SUB),
        ("PUB|SUB", PUB | SUB),
        ("SUB|PUB", PUB | SUB),
        ("DENY", DENY),
        ("x", DENY),
        (None, DENY),
    ],
)
def test_parse_perm(text: str | None, perm: int) -> None:
    assert parse_perm(text) == perm


def test_check_permission() -> None:
    assert check_permission(PUB, PUB | SUB)
    assert not check_permission(PUB, SUB)
    assert not check_permission(SUB, DENY | SUB)
    assert check_permission(2, SUB)  # ANY


@pytest.mark.parametrize(
    ("pattern", "inside", "outside"),
    [
        ("192.168.0.*", "192.168.0.7", "192.168.1.7"),
        ("192.168.1-10.*", "192.168.5.1", "192.168.11.1"),
        ("10.*", "10.200.3.4", "11.0.0.1"),
        ("192.168.1.{1,2}", "192.168.1.2", "192.168.1.3"),
        ("127.0.0.1,10.0.0.1", "10.0.0.1", "10.0.0.2"),
        ("127.0.0.1", "127.0.0.1", "127.0.0.2"),
        ("*", "8.8.8.8", None),
        ("::1", "0:0:0:0:0:0:0:1", "::2"),
    ],
)
def test_address_patterns(pattern: str, inside: str, outside: str | None) -> None:
    match = address_matcher(pattern)
    assert match(inside)
    if outside is not None:
        assert not match(outside)


def test_blank_address_matches_nothing() -> None:
    assert not address_matcher("")("127.0.0.1")
    assert not address_matcher(None)("127.0.0.1")


@pytest.mark.parametrize("pattern", ["300.1.1.1", "192.168.1.300-2", "hello", "1::*"])
def test_bad_address_patterns_are_typed_errors(pattern: str) -> None:
    with pytest.raises(AclConfigError):
        address_matcher(pattern)


@pytest.mark.parametrize(
    "doc",
    [
        {"accounts": [{"accessKey": "short", "secretKey": "12345678"}]},
        {"accounts": [{"accessKey": "longEnough", "secretKey": "123"}]},
        {"accounts": [{"accessKey": "longEnough", "secretKey": "12345678", "topicPerms": ["a=WRITE"]}]},
        {"accounts": [{"accessKey": "longEnough", "secretKey": "12345678", "topicPerms": ["a"]}]},
        {"accounts": "nope"},
        ["not a map"],
    ],
)
def test_bad_files_are_typed_errors(doc: object) -> None:
    with pytest.raises(AclConfigError):
        parse_plain_acl(doc)


def test_invalid_yaml_is_a_typed_error(tmp_path: Path) -> None:
    path = tmp_path / "plain_acl.yml"
    path.write_text("accounts: [\n")
    with pytest.raises(AclConfigError, match="not valid YAML"):
        load_plain_acl(path)


def test_send_checks(validator: PlainAccessValidator) -> None:
    # SEND_MESSAGE_V2: topic in "b"
    assert _remark(validator, _signed(RequestCode.SEND_MESSAGE_V2, {"a": "g", "b": "topicB"}, b"x")) is None
    remark = _remark(validator, _signed(RequestCode.SEND_MESSAGE_V2, {"a": "g", "b": "topicC"}, b"x"))
    assert remark is not None and "No default permission for topic:topicC" in remark
    assert "PlainPermissionManager.checkPerm(PlainPermissionManager.java:610)" in remark
    remark = _remark(validator, _signed(RequestCode.SEND_MESSAGE, {"topic": "other", "producerGroup": "g"}))
    assert remark is not None and "No default permission for topic:other" in remark
    # a retry topic is sent on with the group's SUB
    assert (
        _remark(validator, _signed(RequestCode.SEND_MESSAGE_V2, {"a": "groupC", "b": "%RETRY%groupC"}))
        is None
    )
    remark = _remark(validator, _signed(RequestCode.SEND_MESSAGE_V2, {"a": "groupA", "b": "%RETRY%groupA"}))
    assert remark is not None and "No default permission for group:groupA" in remark


def test_pull_needs_topic_and_group_sub(validator: PlainAccessValidator) -> None:
    ok = {"topic": "topicC", "consumerGroup": "groupB", "queueId": "0"}
    assert _remark(validator, _signed(RequestCode.PULL_MESSAGE, ok)) is None
    remark = _remark(validator, _signed(RequestCode.PULL_MESSAGE, {**ok, "consumerGroup": "groupA"}))
    assert remark is not None and "group:groupA" in remark
    remark = _remark(validator, _signed(RequestCode.PULL_MESSAGE, {**ok, "topic": "topicA"}))
    assert remark is not None and "topic:topicA" in remark


def test_heartbeat_checks_every_group_and_subscription(validator: PlainAccessValidator) -> None:
    def beat(group: str, topic: str) -> RemotingCommand:
        data = HeartbeatData(
            client_id="c",
            consumer_data_set=[
                ConsumerData(group_name=group, subscription_data_set=[SubscriptionData(topic=topic)])
            ],
        )
        return _signed(RequestCode.HEART_BEAT, {}, data.to_json())

    assert _remark(validator, beat("groupC", "topicC")) is None
    assert _remark(validator, beat("groupC", "topicA")) is not None
    assert _remark(validator, beat("groupA", "topicC")) is not None


def test_authentication_failures(validator: PlainAccessValidator) -> None:
    request = RemotingCommand.request(RequestCode.GET_MAX_OFFSET, {"topic": "topicB", "queueId": "0"})
    assert "No accessKey is configured" in (_remark(validator, request) or "")
    unknown = _signed(RequestCode.GET_MAX_OFFSET, {"topic": "t"}, key="nobody12", secret="whatever1")
    assert "No acl config for nobody12" in (_remark(validator, unknown) or "")
    wrong = _signed(RequestCode.GET_MAX_OFFSET, {"topic": "t"}, secret="wrongSecret")
    assert "Check signature failed for accessKey=RocketMQ" in (_remark(validator, wrong) or "")
    tampered = _signed(RequestCode.GET_MAX_OFFSET, {"topic": "t"})
    assert tampered.ext_fields is not None
    tampered.ext_fields["topic"] = "u"
    assert "Check signature failed" in (_remark(validator, tampered) or "")


def test_white_addresses(validator: PlainAccessValidator) -> None:
    unsigned = RemotingCommand.request(RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": "x"})
    # globalWhiteRemoteAddresses pass everything, even unsigned admin requests
    assert _remark(validator, unsigned, "192.168.0.9:1234") is None
    # an account's whiteRemoteAddress grants without a signature (Java: it never restricts)
    wrong = _signed(RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": "x"}, key="rocketmq2", secret="wrongSecret")
    assert _remark(validator, wrong, "192.168.1.20:1234") is None
    assert "Check signature failed" in (_remark(validator, wrong, "10.0.0.1:1234") or "")


def test_admin_codes(validator: PlainAccessValidator) -> None:
    for code in (RequestCode.DELETE_TOPIC_IN_BROKER, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET):
        remark = _remark(validator, _signed(code, {"topic": "topicB"}))
        assert remark is not None and f"Need admin permission for request code={int(code)}" in remark
        assert _remark(validator, _signed(code, {"topic": "topicB"}, key="rocketmq2")) is None


def test_unknown_codes_need_admin(validator: PlainAccessValidator) -> None:
    remark = _remark(validator, _signed(9999, {}))
    assert remark is not None and "Need admin permission for request code=9999" in remark


def test_namesrv_rules(validator: PlainAccessValidator, tmp_path: Path) -> None:
    ns = PlainAccessValidator(validator.data, rule=namesrv_rule)
    unsigned_read = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "t"})
    assert ns.check("10.1.1.1:1", unsigned_read) is None
    register = _signed(RequestCode.REGISTER_BROKER, {"brokerName": "b"})
    refusal = ns.check("10.1.1.1:1", register)
    assert refusal is not None and "Need admin permission" in (refusal.remark or "")
    assert (
        ns.check("10.1.1.1:1", _signed(RequestCode.REGISTER_BROKER, {"brokerName": "b"}, key="rocketmq2"))
        is None
    )


def test_manager_reloads_on_change_and_keeps_old_data_on_a_bad_file(tmp_path: Path) -> None:
    path = tmp_path / "plain_acl.yml"
    path.write_text(SAMPLE)
    manager = PlainPermissionManager(path)
    request = _signed(RequestCode.GET_MAX_OFFSET, {"topic": "t"}, key="newUser1", secret="newSecret1")
    assert manager.validator.check("127.0.0.1:1", request) is not None
    assert not manager.reload_if_changed()
    path.write_text(SAMPLE + "\n  - accessKey: newUser1\n    secretKey: newSecret1\n")
    assert manager.reload_if_changed()
    assert manager.validator.check("127.0.0.1:1", request) is None
    path.write_text("accounts: [\n")  # broken: the previous accounts stay
    assert not manager.reload_if_changed()
    assert manager.validator.check("127.0.0.1:1", request) is None


def test_manager_also_reads_conf_acl_and_watches_it(tmp_path: Path) -> None:
    main = tmp_path / "conf" / "plain_acl.yml"
    acl_dir = tmp_path / "conf" / "acl"
    (acl_dir / "team").mkdir(parents=True)
    main.write_text(SAMPLE)
    (acl_dir / "team" / "more.yaml").write_text(
        "globalWhiteRemoteAddresses: [10.1.1.1]\naccounts:\n  - accessKey: RocketMQ\n    secretKey: otherSecret\n"
        "  - accessKey: teamUser1\n    secretKey: teamSecret1\n"
    )
    manager = PlainPermissionManager(main, acl_dir=acl_dir)
    accounts = manager.validator.data.accounts
    # the directory's files come first: its RocketMQ wins over the main file's (Java: first wins)
    assert (
        accounts["RocketMQ"].secret_key == "otherSecret"
        and "teamUser1" in accounts
        and "rocketmq2" in accounts
    )
    unsigned = RemotingCommand.request(RequestCode.GET_MAX_OFFSET, {"topic": "t"})
    assert manager.validator.check("10.1.1.1:1", unsigned) is None  # white lists add up
    (acl_dir / "late.yml").write_text("accounts:\n  - accessKey: lateUser1\n    secretKey: lateSecret1\n")
    assert manager.reload_if_changed() and "lateUser1" in manager.validator.data.accounts
    (acl_dir / "late.yml").unlink()
    assert manager.reload_if_changed() and "lateUser1" not in manager.validator.data.accounts
