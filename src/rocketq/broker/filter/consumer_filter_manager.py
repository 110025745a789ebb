"""The compiled SQL92 subscriptions of a broker: ``ConsumerFilterManager``.

Mirrors ``org.apache.rocketmq.broker.filter.ConsumerFilterManager`` and
``ConsumerFilterData`` (4.9.7). Every heartbeat registers the group's subscriptions
(``DefaultConsumerIdsChangeListener`` on REGISTER); tag subscriptions are ignored.

Invariants (``FilterDataMapByTopic.register``):

* a registration with a client version (the subscription's ``subVersion``) not newer
  than the stored one changes nothing, except that the same version revives a dead entry;
* a newer version with the same expression and type only bumps the version (and revives);
  a changed expression is compiled and replaces the entry, and if it does not compile
  the entry is removed (the pull then answers FILTER_DATA_NOT_EXIST);
* topics a group no longer subscribes to, and every topic of a group whose last consumer
  left (UNREGISTER), are marked dead (``deadTime``) but kept: ``get`` still finds them.

Not mirrored: the bloom filter data (``BloomFilterData``, used with the consume-queue
extension, which rocketq's store does not write), persistence to ``consumerFilter.json``
and the 24-hour clean-up of dead entries (entries live as long as the broker process).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from rocketq.filter import FilterParseError, SqlExpression, compile_expression
from rocketq.protocol.heartbeat import ExpressionType, SubscriptionData

__all__ = ["ConsumerFilterData", "ConsumerFilterManager"]

log = logging.getLogger(__name__)


def _wall_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(kw_only=True)
class ConsumerFilterData:
    """``ConsumerFilterData``: one group's compiled expression on one topic."""

    consumer_group: str
    topic: str
    expression: str
    expression_type: str
    compiled_expression: SqlExpression
    client_version: int
    born_time: int
    dead_time: int = 0

    @property
    def is_dead(self) -> bool:
        return self.dead_time >= self.born_time


def build_filter_data(
    topic: str,
    group: str,
    expression: str | None,
    expression_type: str | None,
    client_version: int,
    now_ms: int,
) -> ConsumerFilterData | None:
    """``ConsumerFilterManager.build``: None for a tag type or an expression that does not
    compile (logged)."""
    if ExpressionType.is_tag_type(expression_type) or not expression:
        return None
    assert expression_type is not None
    try:
        compiled = compile_expression(expression_type, expression)
    except FilterParseError as exc:
        log.error(
            "compile %s expression of %s@%s failed: %s (%s)", expression_type, group, topic, exc, expression
        )
        return None
    return ConsumerFilterData(
        consumer_group=group,
        topic=topic,
        expression=expression,
        expression_type=expression_type,
        compiled_expression=compiled,
        client_version=client_version,
        born_time=now_ms,
    )


class ConsumerFilterManager:
    """SQL92 filter data by topic, then group (``ConsumerFilterManager``). Thread-safe."""

    def __init__(self, *, wall_ms: Callable[[], int] = _wall_ms) -> None:
        self._wall_ms = wall_ms
        self._lock = threading.Lock()
        self._by_topic: dict[str, dict[str, ConsumerFilterData]] = {}

    def get(self, topic: str, group: str) -> ConsumerFilterData | None:
        """``get(topic, consumerGroup)``: the entry, dead or alive, or None."""
        groups = self._by_topic.get(topic)
        return None if groups is None else groups.get(group)

    def get_by_group(self, group: str) -> list[ConsumerFilterData]:
        """``getByGroup``: the group's entries on every topic."""
        with self._lock:
            return [d for groups in self._by_topic.values() if (d := groups.get(group)) is not None]

    def register_subscriptions(self, group: str, subscriptions: Iterable[SubscriptionData]) -> None:
        """``register(consumerGroup, subList)``: every heartbeat; topics no longer listed die."""
        subs = list(subscriptions)
        for sd in subs:
            if sd.topic:
                self.register(sd.topic, group, sd.sub_string, sd.expression_type, sd.sub_version)
        topics = {sd.topic for sd in subs}
        now = self._wall_ms()
        with self._lock:
            for topic, groups in self._by_topic.items():
                data = groups.get(group)
                if data is not None and topic not in topics and not data.is_dead:
                    data.dead_time = now
                    log.info("consumer filter of %s@%s is dead: no longer subscribed", group, topic)

    def register(
        self, topic: str, group: str, expression: str | None, expression_type: str | None, client_version: int
    ) -> bool:
        """``register(topic, group, expression, type, clientVersion)``: True if stored."""
        if ExpressionType.is_tag_type(expression_type) or not expression:
            return False
        assert expression_type is not None
        now = self._wall_ms()
        with self._lock:
            groups = self._by_topic.setdefault(topic, {})
            old = groups.get(group)
            if old is not None and client_version <= old.client_version:
                if old.client_version == client_version and old.is_dead:
                    old.dead_time = 0
                    old.born_time = now
                    return True
                return False
            if old is not None and old.expression == expression and old.expression_type == expression_type:
                old.client_version = client_version
                if old.is_dead:
                    old.dead_time = 0
                    old.born_time = now
                return True
        data = build_filter_data(topic, group, expression, expression_type, client_version, now)
        with self._lock:
            groups = self._by_topic.setdefault(topic, {})
            if data is None:
                # a new expression that does not compile: drop the old one, let the client fail
                groups.pop(group, None)
                return False
            current = groups.get(group)
            if current is not None and current.client_version >= client_version:
                return False  # a concurrent registration won
            groups[group] = data
        log.info(
            "registered consumer filter %s@%s: %s %s (v%d)",
            group,
            topic,
            expression_type,
            expression,
            client_version,
        )
        return True

    def unregister(self, group: str) -> None:
        """``unRegister(consumerGroup)``: the group's entries die (its last consumer left)."""
        now = self._wall_ms()
        with self._lock:
            for groups in self._by_topic.values():
                data = groups.get(group)
                if data is not None and not data.is_dead:
                    data.dead_time = now
