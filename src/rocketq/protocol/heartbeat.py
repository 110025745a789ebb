"""The HEART_BEAT body and subscriptions: ``HeartbeatData``, ``ConsumerData``, ``SubscriptionData``.

Mirrors ``org.apache.rocketmq.common.protocol.heartbeat.*`` and
``org.apache.rocketmq.common.filter.FilterAPI`` / ``ExpressionType`` of RocketMQ 4.9.7
(protocol reference sections 2.4 HEART_BEAT, 4.2 and 4.4).

Invariants:

* Java ``Set`` properties (``tagsSet``, ``codeSet``, ``subscriptionDataSet``, ...) are
  Python ``list``\\ s so that a parsed body re-serializes in its wire order; code that
  builds them (:func:`build_subscription_data`) fills them in Java ``HashSet`` order.
* ``HeartbeatData`` says ``clientID`` (capital ID) on the wire; the lock bodies and
  ``ConsumerRunningInfo`` say ``clientId``.
* 5.x-only properties (``heartbeatFingerprint``, ``withoutSub``) are not modelled, so they
  are never emitted; reading a 5.x body ignores them.
"""

from __future__ import annotations

import enum
import time
from dataclasses import dataclass, field

from rocketq.errors import IllegalArgumentError
from rocketq.protocol.fastjson import JsonBean, java_prop
from rocketq.protocol.java import hashmap_order, string_hash

__all__ = [
    "SUB_ALL",
    "ConsumeFromWhere",
    "ConsumeType",
    "ConsumerData",
    "ExpressionType",
    "HeartbeatData",
    "MessageModel",
    "ProducerData",
    "SubscriptionData",
    "build_subscription_data",
    "check_tag_expression",
]

#: ``SubscriptionData.SUB_ALL``: the expression that matches every tag.
SUB_ALL = "*"


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class ConsumeType(enum.Enum):
    """``ConsumeType``; value = Java ordinal. Pull consumers are ACTIVELY, push PASSIVELY."""

    CONSUME_ACTIVELY = 0
    CONSUME_PASSIVELY = 1


class MessageModel(enum.Enum):
    """``MessageModel``; value = Java ordinal."""

    BROADCASTING = 0
    CLUSTERING = 1


class ConsumeFromWhere(enum.Enum):
    """``org.apache.rocketmq.common.consumer.ConsumeFromWhere``; value = Java ordinal.

    The three deprecated members behave like ``CONSUME_FROM_LAST_OFFSET`` in the client.
    """

    CONSUME_FROM_LAST_OFFSET = 0
    CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST = 1
    CONSUME_FROM_MIN_OFFSET = 2
    CONSUME_FROM_MAX_OFFSET = 3
    CONSUME_FROM_FIRST_OFFSET = 4
    CONSUME_FROM_TIMESTAMP = 5


class ExpressionType(str, enum.Enum):
    """``org.apache.rocketmq.common.filter.ExpressionType``: string constants in Java.

    ``SubscriptionData.expression_type`` is a plain ``str`` (as in Java); these members
    are ``str`` too, so either spelling can be stored.
    """

    TAG = "TAG"
    SQL92 = "SQL92"

    @staticmethod
    def is_tag_type(expression_type: str | None) -> bool:
        """``ExpressionType.isTagType``: ``None``, empty and ``TAG`` are tag filters."""
        return expression_type is None or expression_type in ("", "TAG")


@dataclass(kw_only=True)
class SubscriptionData(JsonBean):
    """``SubscriptionData``: one topic subscription (heartbeats, running info, connections).

    Defaults as in Java: ``sub_version`` is the creation time in ms, ``expression_type``
    ``TAG``, empty ``tags_set``/``code_set`` (= all tags when ``sub_string`` is ``*``).
    ``filterClassSource`` is never serialized (``@JSONField(serialize=false)``) and so is
    not modelled.
    """

    JAVA_CLASS = "org.apache.rocketmq.common.protocol.heartbeat.SubscriptionData"

    class_filter_mode: bool = False
    topic: str | None = None
    sub_string: str | None = None
    tags_set: list[str] = field(default_factory=list)
    code_set: list[int] = field(default_factory=list)
    sub_version: int = field(default_factory=_now_ms)
    expression_type: str | None = "TAG"

    def sort_key(self) -> str:
        """``compareTo`` order (``TreeSet`` in ConsumerRunningInfo): ``topic@subString``."""
        return f"{self.topic}@{self.sub_string}"


@dataclass(kw_only=True)
class ConsumerData(JsonBean):
    """``ConsumerData``: one consumer group of a client in a heartbeat."""

    JAVA_CLASS = "org.apache.rocketmq.common.protocol.heartbeat.ConsumerData"

    group_name: str | None = None
    consume_type: ConsumeType | None = None
    message_model: MessageModel | None = None
    consume_from_where: ConsumeFromWhere | None = None
    subscription_data_set: list[SubscriptionData] = field(default_factory=list)
    unit_mode: bool = False


@dataclass(kw_only=True)
class ProducerData(JsonBean):
    """``ProducerData``: one producer group of a client in a heartbeat."""

    JAVA_CLASS = "org.apache.rocketmq.common.protocol.heartbeat.ProducerData"

    group_name: str | None = None


@dataclass(kw_only=True)
class HeartbeatData(JsonBean):
    """``HeartbeatData``: the HEART_BEAT (34) request body. Note ``clientID`` on the wire."""

    JAVA_CLASS = "org.apache.rocketmq.common.protocol.heartbeat.HeartbeatData"

    # Java getter getClientID() -> property "clientID" (HeartbeatData.java).
    client_id: str | None = field(default=None, metadata=java_prop("clientID"))
    producer_data_set: list[ProducerData] = field(default_factory=list)
    consumer_data_set: list[ConsumerData] = field(default_factory=list)


def _java_trim(s: str) -> str:
    # String.trim() strips every char <= U+0020 at both ends, not Unicode whitespace.
    start, end = 0, len(s)
    while start < end and s[start] <= " ":
        start += 1
    while end > start and s[end - 1] <= " ":
        end -= 1
    return s[start:end]


def check_tag_expression(expression: str | None) -> str | None:
    """A client-side check of a TAG subscription expression (rocketq only; Java has none).

    Java splits the expression on ``||`` only, so ``"TagA | TagB"`` or ``"TagA && TagB"``
    subscribe to the tags ``"TagA | TagB"`` / ``"TagA && TagB"`` and silently match nothing.
    rocketq's consumers call this in ``subscribe``:

    * a tag holding ``|`` or ``&`` (a mistyped operator: ``||`` is the only one) raises
      :class:`IllegalArgumentError` naming the expression;
    * a tag holding whitespace or ``,``, or ``*`` next to other tags, is legal but likely a
      mistake: the returned text is a warning for the caller to log (None when all is well).

    The broker never calls this: it filters whatever a client subscribed, as Java does.
    """
    if expression is None or expression in ("", SUB_ALL):
        return None
    tags = [t for t in (_java_trim(p) for p in expression.split("||")) if t]
    for tag in tags:
        if "|" in tag or "&" in tag:
            raise IllegalArgumentError(
                f"subscription expression {expression!r}: tag {tag!r} holds '|' or '&'; "
                "the only operator is '||' (\"TagA || TagB\"), and there is no AND"
            )
    odd = [t for t in tags if "," in t or any(c <= " " for c in t)]
    if odd:
        return (
            f"subscription expression {expression!r}: tag(s) {odd} contain a space or ','; "
            "tags are separated by '||' only, so these match nothing unless a tag is spelled so"
        )
    if SUB_ALL in tags and len(tags) > 1:
        return (
            f"subscription expression {expression!r}: '*' is the wildcard only on its own; "
            "next to other tags it is the literal tag '*'"
        )
    return None


def build_subscription_data(
    topic: str,
    expression: str | None,
    *,
    sub_version: int | None = None,
    expression_type: str = "TAG",
) -> SubscriptionData:
    """``FilterAPI.build`` / ``buildSubscriptionData``: parse a subscription expression.

    TAG (default): ``None``, ``""`` or exactly ``"*"`` subscribe to everything
    (``sub_string`` becomes ``"*"``, no tags). Otherwise the expression is split on the
    literal ``||``, each part trimmed like Java ``String.trim`` and empty parts dropped;
    ``tags_set`` holds the parts and ``code_set`` their ``String.hashCode``, both in Java
    ``HashSet`` iteration order, while ``sub_string`` keeps the original text. (As in
    Java, ``" * "`` is not the wildcard: it yields the tag ``*``.)

    Any other ``expression_type`` (``SQL92``): the expression is kept verbatim with no
    tags; an empty expression raises :class:`IllegalArgumentError`.

    ``sub_version`` defaults to the current time in ms (Java ``System.currentTimeMillis``).
    """
    version = _now_ms() if sub_version is None else sub_version
    if isinstance(expression_type, ExpressionType):
        expression_type = expression_type.value
    # FilterAPI.build takes the tag path only for exactly "TAG" (or null).
    if expression_type != "TAG":
        if not expression:
            raise IllegalArgumentError(f"Expression can't be null! {expression_type}")
        return SubscriptionData(
            topic=topic, sub_string=expression, sub_version=version, expression_type=expression_type
        )
    data = SubscriptionData(topic=topic, sub_string=expression, sub_version=version, expression_type="TAG")
    if expression is None or expression in ("", SUB_ALL):
        data.sub_string = SUB_ALL
        return data
    tags: list[str] = []
    for part in expression.split("||"):
        tag = _java_trim(part)
        if tag:
            tags.append(tag)
    data.tags_set = hashmap_order(tags)
    data.code_set = hashmap_order([string_hash(t) for t in tags])  # HashSet<Integer> order
    return data
