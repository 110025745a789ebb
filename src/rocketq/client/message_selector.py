"""How a consumer selects messages: ``MessageSelector``.

Mirrors ``org.apache.rocketmq.client.consumer.MessageSelector`` (4.9.7): a tag expression
(``by_tag``, the default kind of subscription: ``"*"``, ``"TagA || TagB"``) or an SQL92
expression over message properties (``by_sql``), filtered on the broker, which must run
with ``enablePropertyFilter=true``.

:func:`build_subscription` turns a selector into the ``SubscriptionData`` that heartbeats
and pulls carry (``FilterAPI.build``): an SQL92 selector keeps its text verbatim with
``expressionType`` ``SQL92`` and no tags. An SQL92 text is compiled here first, so a bad
expression fails at ``subscribe()`` with :class:`~rocketq.filter.FilterParseError` instead
of at every pull (Java only finds out at ``start()``, from the broker's CHECK_CLIENT_CONFIG
answer; rocketq does that check as well).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rocketq.errors import ClientError, RocketqError
from rocketq.filter import compile_sql
from rocketq.protocol.heartbeat import (
    SUB_ALL,
    ExpressionType,
    SubscriptionData,
    build_subscription_data,
    check_tag_expression,
)

if TYPE_CHECKING:
    from rocketq.client.instance import MQClientInstance

__all__ = ["MessageSelector", "build_subscription", "check_client_in_broker"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class MessageSelector:
    """A subscription's filter: ``expression_type`` ``TAG`` or ``SQL92`` and its text."""

    expression_type: str
    expression: str | None

    @classmethod
    def by_sql(cls, sql: str) -> MessageSelector:
        """``MessageSelector.bySql``: an SQL92 expression (checked now, see module doc)."""
        compile_sql(sql)
        return cls(ExpressionType.SQL92.value, sql)

    @classmethod
    def by_tag(cls, tag: str | None = SUB_ALL) -> MessageSelector:
        """``MessageSelector.byTag``: ``"*"`` (every tag, the default) or ``"A || B"``."""
        return cls(ExpressionType.TAG.value, tag)


def build_subscription(
    topic: str, selector: MessageSelector | str | None, *, sub_version: int | None = None
) -> SubscriptionData:
    """``FilterAPI.build`` for a selector or a plain tag expression (None means ``*``).

    A tag expression is checked first (:func:`~rocketq.protocol.heartbeat.check_tag_expression`:
    ``|`` or ``&`` in a tag raises IllegalArgumentError, a space or ``,`` is logged).
    """
    if selector is None:
        selector = MessageSelector.by_tag(SUB_ALL)
    elif isinstance(selector, str):
        selector = MessageSelector.by_tag(selector)
    if ExpressionType.is_tag_type(selector.expression_type):
        warning = check_tag_expression(selector.expression)
        if warning:
            log.warning("%s", warning)
    return build_subscription_data(
        topic, selector.expression, sub_version=sub_version, expression_type=selector.expression_type
    )


def check_client_in_broker(
    instance: MQClientInstance, group: str, subscriptions: Iterable[SubscriptionData]
) -> None:
    """``MQClientInstance.checkClientInBroker``: ask one broker of each non-tag
    subscription's topic whether it accepts the filter (CHECK_CLIENT_CONFIG).

    Raises :class:`ClientError` with the broker's code and remark when it refuses (no
    ``enablePropertyFilter``: SYSTEM_ERROR; an expression it cannot compile:
    SUBSCRIPTION_PARSE_FAILED). Topics without a known broker are skipped, as in Java.
    """
    for sd in subscriptions:
        if ExpressionType.is_tag_type(sd.expression_type) or not sd.topic:
            continue
        addr = instance.find_broker_addr_by_topic(sd.topic)
        if addr is None:
            continue
        try:
            instance.api.check_client_in_broker(
                addr, group, instance.client_id, sd, instance.config.mq_client_api_timeout_ms
            )
        except RocketqError as exc:
            raise ClientError(
                f"Check client in broker error, the broker {addr} refuses the "
                f"{sd.expression_type} subscription {sd.sub_string!r} of {group}: {exc}"
            ) from exc
