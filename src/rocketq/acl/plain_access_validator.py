"""The broker's and the name server's access check: request -> needed permissions -> verdict.

Mirrors ``PlainAccessValidator.parse`` (which resources a request touches, by request code)
and ``PlainPermissionManager.validate``/``checkPerm`` of Apache RocketMQ 4.9.7.

Order of the checks (``validate``): a global white address passes everything; then the
request must name an access key, the key must be known, a request from the account's own
``whiteRemoteAddress`` passes without a signature (Java's rule: the white list *grants*, it
never restricts); otherwise the signature must match, admin-only codes need an admin
account, and each touched resource needs its permission (from ``topicPerms``/``groupPerms``,
else the account's default; an admin account without any listed resource passes). A send
that only publishes to ``RMQ_SYSRMQ_SYS_TRACE_TOPIC`` skips the resource check, as in Java.

Every refusal is :class:`AclDenied` carrying Java's message; the remoting server turns it
into Java's answer: SYSTEM_ERROR with ``RemotingHelper.exceptionSimpleDesc`` of the
``AclException`` (class name, message, first stack frame), see :func:`denial_remark`.

Request codes (:data:`BROKER_CODE_RULES`): the ones Java's ``parse`` knows keep their
mapping; rocketq adds the codes Java leaves unchecked that touch a group or topic
(batch send, offset query, queue locks), requires an admin account for state-changing
administration (:data:`~rocketq.acl.permission.ADMIN_CODES`), and treats any code missing
from the table as admin-only, so a new processor cannot be reached by ordinary accounts
before someone decides what it needs. The name server (beyond Java, which has no ACL there)
leaves its reads open (:data:`NAMESRV_OPEN_CODES`) and requires an admin account for
everything else (broker registration, topic deletion, KV and config writes).

Invariants: the verdict depends only on the request, the client address and the loaded
:class:`~rocketq.acl.plain_acl_config.PlainAclData`, which is swapped whole on reload
(a reader sees the old or the new file, never a mix).
"""

from __future__ import annotations

import enum
import hmac
import logging
import types
from collections.abc import Callable, Mapping
from typing import Final

from rocketq.acl.permission import ADMIN_CODES, PUB, SUB, check_permission
from rocketq.acl.plain_acl_config import PlainAclData
from rocketq.acl.signing import ACCESS_KEY, SECURITY_TOKEN, SIGNATURE, cal_signature, combine_request_content
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frame import FLAG_RESPONSE, RemotingCommand
from rocketq.protocol.mixall import RETRY_GROUP_TOPIC_PREFIX, RMQ_SYS_TRACE_TOPIC, retry_topic

__all__ = [
    "ACL_EXCEPTION_CLASS",
    "BROKER_CODE_RULES",
    "NAMESRV_OPEN_CODES",
    "AccessRequest",
    "AclDenied",
    "CodeRule",
    "PlainAccessValidator",
    "broker_rule",
    "denial_remark",
    "namesrv_rule",
    "parse_request",
]

log = logging.getLogger(__name__)

#: The class Java names in its refusal remark.
ACL_EXCEPTION_CLASS: Final = "org.apache.rocketmq.acl.common.AclException"
#: ``MixAll.UNIQUE_MSG_QUERY_FLAG``: the validator leaves it out of the signed content.
_UNIQUE_MSG_QUERY_FLAG: Final = "_UNIQUE_KEY_QUERY"
_NOT_SIGNED: Final = frozenset({_UNIQUE_MSG_QUERY_FLAG})

_PPM: Final = "org.apache.rocketmq.acl.plain.PlainPermissionManager"
#: The first stack frame of each refusal in Java 4.9.7 (exceptionSimpleDesc prints it).
_FRAME_VALIDATE: Final = {
    "no_key": f"{_PPM}.validate(PlainPermissionManager.java:663)",
    "unknown_key": f"{_PPM}.validate(PlainPermissionManager.java:667)",
    "signature": f"{_PPM}.validate(PlainPermissionManager.java:683)",
    "admin": f"{_PPM}.checkPerm(PlainPermissionManager.java:580)",
    "default_perm": f"{_PPM}.checkPerm(PlainPermissionManager.java:605)",
    "resource_perm": f"{_PPM}.checkPerm(PlainPermissionManager.java:610)",
    "parse": "org.apache.rocketmq.acl.plain.PlainAccessValidator.parse(PlainAccessValidator.java:134)",
}


class AclDenied(Exception):
    """A request the ACL refuses (Java's ``AclException``); ``kind`` names the check."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind


def denial_remark(denied: AclDenied) -> str:
    """Java's remark: ``exceptionSimpleDesc(aclException)``."""
    return f"{ACL_EXCEPTION_CLASS}: {denied.message}, {_FRAME_VALIDATE[denied.kind]}"


class CodeRule(enum.Enum):
    """What a request code needs beyond a valid signature."""

    #: a valid signature (or a white address) is enough
    AUTHENTICATED = "authenticated"
    #: the touched topics/groups need permissions (``parse``'s cases)
    RESOURCES = "resources"
    #: an admin account
    ADMIN = "admin"
    #: nothing at all (name-server reads)
    OPEN = "open"


class AccessRequest:
    """What one request asks for (``PlainAccessResource`` as ``parse`` fills it)."""

    __slots__ = ("access_key", "code", "content", "remote_ip", "resources", "security_token", "signature")

    def __init__(self, code: int, remote_ip: str) -> None:
        self.code = code
        self.remote_ip = remote_ip
        self.access_key: str | None = None
        self.signature: str | None = None
        self.security_token: str | None = None
        #: topic (or %RETRY%group) -> needed permission
        self.resources: dict[str, int] = {}
        self.content = b""


def _group(resources: dict[str, int], group: str | None, perm: int = SUB) -> None:
    if group is not None:
        resources[retry_topic(group)] = perm


def _topic(resources: dict[str, int], topic: str | None, perm: int) -> None:
    if topic is not None:
        resources[topic] = perm


def _send(topic_key: str, group_key: str) -> Callable[[RemotingCommand, dict[str, int]], None]:
    def parse(request: RemotingCommand, out: dict[str, int]) -> None:
        ext = request.ext_fields or {}
        topic = ext.get(topic_key)
        if topic is not None and topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            _group(out, ext.get(group_key))
        else:
            _topic(out, topic, PUB)

    return parse


def _heartbeat(request: RemotingCommand, out: dict[str, int]) -> None:
    from rocketq.protocol.heartbeat import HeartbeatData

    data = HeartbeatData.from_json(request.body)
    for consumer in data.consumer_data_set:
        _group(out, consumer.group_name)
        for sub in consumer.subscription_data_set:
            _topic(out, sub.topic, SUB)


def _group_field(name: str) -> Callable[[RemotingCommand, dict[str, int]], None]:
    def parse(request: RemotingCommand, out: dict[str, int]) -> None:
        _group(out, (request.ext_fields or {}).get(name))

    return parse


def _group_and_topic(request: RemotingCommand, out: dict[str, int]) -> None:
    ext = request.ext_fields or {}
    _group(out, ext.get("consumerGroup"))
    _topic(out, ext.get("topic"), SUB)


def _pull(request: RemotingCommand, out: dict[str, int]) -> None:
    ext = request.ext_fields or {}
    _topic(out, ext.get("topic"), SUB)
    _group(out, ext.get("consumerGroup"))


def _query(request: RemotingCommand, out: dict[str, int]) -> None:
    _topic(out, (request.ext_fields or {}).get("topic"), SUB)


def _lock_body(request: RemotingCommand, out: dict[str, int]) -> None:
    # rocketq: LOCK_BATCH_MQ / UNLOCK_BATCH_MQ name their group in the JSON body.
    from rocketq.protocol.bodies import LockBatchRequestBody

    _group(out, LockBatchRequestBody.from_json(request.body).consumer_group)


_ResourceParser = Callable[[RemotingCommand, dict[str, int]], None]

#: Java's PlainAccessValidator.parse cases, then rocketq's additions (marked).
_RESOURCE_PARSERS: Final[Mapping[int, _ResourceParser]] = types.MappingProxyType(
    {
        # Java reads "group", a field SendMessageRequestHeader does not have: no group check.
        RequestCode.SEND_MESSAGE: _send("topic", "group"),
        RequestCode.SEND_MESSAGE_V2: _send("b", "a"),
        RequestCode.CONSUMER_SEND_MSG_BACK: _group_field("group"),
        RequestCode.PULL_MESSAGE: _pull,
        RequestCode.QUERY_MESSAGE: _query,
        RequestCode.HEART_BEAT: _heartbeat,
        RequestCode.UNREGISTER_CLIENT: _group_field("consumerGroup"),
        RequestCode.GET_CONSUMER_LIST_BY_GROUP: _group_field("consumerGroup"),
        RequestCode.UPDATE_CONSUMER_OFFSET: _group_and_topic,
        # rocketq: Java 4.9.7 checks no resource for these.
        RequestCode.SEND_BATCH_MESSAGE: _send("b", "a"),
        RequestCode.QUERY_CONSUMER_OFFSET: _group_and_topic,
        RequestCode.LOCK_BATCH_MQ: _lock_body,
        RequestCode.UNLOCK_BATCH_MQ: _lock_body,
    }
)

#: Every request code rocketq's broker serves, and what it needs (see the module docstring).
BROKER_CODE_RULES: Final[Mapping[int, CodeRule]] = types.MappingProxyType(
    {
        **dict.fromkeys(_RESOURCE_PARSERS, CodeRule.RESOURCES),
        **dict.fromkeys(ADMIN_CODES, CodeRule.ADMIN),
        **dict.fromkeys(
            (
                RequestCode.CHECK_CLIENT_CONFIG,
                RequestCode.VIEW_MESSAGE_BY_ID,
                RequestCode.GET_ALL_TOPIC_CONFIG,
                RequestCode.GET_BROKER_CONFIG,
                RequestCode.SEARCH_OFFSET_BY_TIMESTAMP,
                RequestCode.GET_MAX_OFFSET,
                RequestCode.GET_MIN_OFFSET,
                RequestCode.GET_EARLIEST_MSG_STORETIME,
                RequestCode.GET_BROKER_RUNTIME_INFO,
                RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG,
                RequestCode.GET_TOPIC_STATS_INFO,
                RequestCode.GET_CONSUMER_CONNECTION_LIST,
                RequestCode.GET_PRODUCER_CONNECTION_LIST,
                RequestCode.GET_CONSUME_STATS,
                RequestCode.QUERY_TOPIC_CONSUME_BY_WHO,
                RequestCode.GET_CONSUMER_RUNNING_INFO,
                RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS,
                RequestCode.VIEW_BROKER_STATS_DATA,
                RequestCode.GET_ALL_CONSUMER_OFFSET,
                RequestCode.GET_ALL_DELAY_OFFSET,
                RequestCode.GET_TOPIC_CONFIG,
                RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG,
                RequestCode.QUERY_DATA_VERSION,
                # As Java: the header names no topic (the half message's send was checked).
                RequestCode.END_TRANSACTION,
                # As Java: replies go to the cluster's reply topic, a system topic.
                RequestCode.SEND_REPLY_MESSAGE,
                RequestCode.SEND_REPLY_MESSAGE_V2,
            ),
            CodeRule.AUTHENTICATED,
        ),
    }
)

#: Name-server reads: open to everyone even with ACL on (rocketq; Java's name server has no ACL).
NAMESRV_OPEN_CODES: Final = frozenset(
    {
        RequestCode.GET_KV_CONFIG,
        RequestCode.QUERY_DATA_VERSION,
        RequestCode.GET_ROUTEINFO_BY_TOPIC,
        RequestCode.GET_BROKER_CLUSTER_INFO,
        RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
        RequestCode.GET_KVLIST_BY_NAMESPACE,
        RequestCode.GET_TOPICS_BY_CLUSTER,
        RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS,
        RequestCode.GET_UNIT_TOPIC_LIST,
        RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST,
        RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST,
        RequestCode.GET_NAMESRV_CONFIG,
    }
)


def namesrv_rule(code: int) -> CodeRule:
    """What a name-server request needs: reads are open, everything else needs an admin."""
    return CodeRule.OPEN if code in NAMESRV_OPEN_CODES else CodeRule.ADMIN


def broker_rule(code: int) -> CodeRule:
    """What a broker request needs; a code missing from the table needs an admin account."""
    return BROKER_CODE_RULES.get(code, CodeRule.ADMIN)


def _client_ip(remote_addr: str) -> str:
    # PlainAccessValidator.parse: everything before the last ':'; IPv6 brackets dropped.
    host = remote_addr.rpartition(":")[0] if ":" in remote_addr else remote_addr
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host


def parse_request(request: RemotingCommand, remote_addr: str) -> AccessRequest:
    """``PlainAccessValidator.parse``: credentials, touched resources and signed content."""
    access = AccessRequest(request.code, _client_ip(remote_addr))
    ext = request.ext_fields
    if ext is None:
        return access
    access.access_key = ext.get(ACCESS_KEY)
    access.signature = ext.get(SIGNATURE)
    access.security_token = ext.get(SECURITY_TOKEN)
    parser = _RESOURCE_PARSERS.get(request.code)
    if parser is not None:
        try:
            parser(request, access.resources)
        except Exception as exc:
            raise AclDenied(str(exc), "parse") from exc
    access.content = combine_request_content(ext, request.body, skip=_NOT_SIGNED)
    return access


def _print_resource(resource: str) -> str:
    # PlainAccessResource.printStr
    if resource.startswith(RETRY_GROUP_TOPIC_PREFIX):
        return f"group:{resource[len(RETRY_GROUP_TOPIC_PREFIX) :]}"
    return f"topic:{resource}"


class PlainAccessValidator:
    """Checks requests against the current ``plain_acl.yml`` data (``PlainAccessValidator``).

    ``rule`` maps a request code to what it needs (:func:`broker_rule` or
    :func:`namesrv_rule`). :meth:`update` swaps the data (reload); :meth:`check` is the
    server's request hook: None to go on, or the refusal to write back.
    """

    def __init__(self, data: PlainAclData, *, rule: Callable[[int], CodeRule] = broker_rule) -> None:
        self._data = data
        self._rule = rule

    @property
    def data(self) -> PlainAclData:
        return self._data

    def update(self, data: PlainAclData) -> None:
        """Use ``data`` from now on (one reference swap: readers see old or new, never a mix)."""
        self._data = data

    def check(self, remote_addr: str, request: RemotingCommand) -> RemotingCommand | None:
        """The remoting server's hook: None if allowed, else Java's refusal answer."""
        rule = self._rule(request.code)
        if rule is CodeRule.OPEN:
            return None
        try:
            self.validate(parse_request(request, remote_addr), rule)
        except AclDenied as denied:
            log.warning("ACL refused request code %d from %s: %s", request.code, remote_addr, denied.message)
            # NettyRemotingAbstract.processRequestCommand: the hook's exception becomes
            # SYSTEM_ERROR + exceptionSimpleDesc, in the default serialize type.
            return RemotingCommand(
                code=ResponseCode.SYSTEM_ERROR,
                flag=FLAG_RESPONSE,
                opaque=request.opaque,
                remark=denial_remark(denied),
            )
        return None

    def validate(self, access: AccessRequest, rule: CodeRule = CodeRule.RESOURCES) -> None:
        """``PlainPermissionManager.validate``; raises :class:`AclDenied`."""
        data = self._data
        ip = access.remote_ip
        for white in data.global_white:
            if white(ip):
                return
        key = access.access_key
        if key is None:
            raise AclDenied("No accessKey is configured", "no_key")
        owned = data.accounts.get(key)
        if owned is None:
            raise AclDenied(f"No acl config for {key}", "unknown_key")
        if owned.white_matcher(ip):
            return
        expected = cal_signature(access.content, owned.secret_key)
        if access.signature is None or not hmac.compare_digest(expected, access.signature):
            raise AclDenied(f"Check signature failed for accessKey={key}", "signature")
        if access.resources.get(RMQ_SYS_TRACE_TOPIC) == PUB:
            return
        # checkPerm
        if rule is CodeRule.ADMIN and not owned.admin:
            raise AclDenied(
                f"Need admin permission for request code={access.code}, but accessKey={key} is not", "admin"
            )
        needed = access.resources
        if not needed:
            return
        owned_perms = owned.resource_perms
        if not owned_perms and owned.admin:
            return
        for resource, perm in needed.items():
            is_group = resource.startswith(RETRY_GROUP_TOPIC_PREFIX)
            listed = owned_perms.get(resource)
            if listed is None:
                default = owned.default_group_perm if is_group else owned.default_topic_perm
                if not check_permission(perm, default):
                    raise AclDenied(f"No default permission for {_print_resource(resource)}", "default_perm")
            elif not check_permission(perm, listed):
                raise AclDenied(f"No default permission for {_print_resource(resource)}", "resource_perm")
