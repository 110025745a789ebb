"""What a pull checks per message: ``ExpressionMessageFilter``.

Mirrors ``org.apache.rocketmq.broker.filter.ExpressionMessageFilter`` (4.9.7):

* on the consume queue, a tag subscription matches by tags code (``*``, no code set and
  class-filter mode match everything); an SQL92 subscription matches every unit (Java
  would consult a bloom filter in the consume-queue extension; rocketq has none);
* on the commit log, only SQL92 subscriptions filter: the record's properties are decoded
  (``MessageDecoder.decodeProperties``) and the compiled expression must evaluate to
  TRUE; null, FALSE and an evaluation error are no match. Without filter data (or with
  a tag subscription) every record matches.
"""

from __future__ import annotations

from collections.abc import Mapping

from rocketq.broker.filter.consumer_filter_manager import ConsumerFilterData
from rocketq.protocol.heartbeat import SUB_ALL, ExpressionType, SubscriptionData
from rocketq.protocol.message import decode_record_properties

__all__ = ["ExpressionMessageFilter"]


_UINT32 = 0xFFFFFFFF


class ExpressionMessageFilter:
    """The filter of one pull request."""

    __slots__ = ("_expression", "_match_all_units", "filters_records", "unit_matcher")

    def __init__(self, subscription: SubscriptionData | None, filter_data: ConsumerFilterData | None) -> None:
        sub = subscription
        tag_type = sub is None or ExpressionType.is_tag_type(sub.expression_type)
        self._match_all_units = (
            sub is None
            or sub.class_filter_mode
            or not tag_type
            or sub.sub_string == SUB_ALL
            or not sub.code_set
        )
        # Java compares tagsCode.intValue() with the int codes; comparing the low 32 bits
        # unsigned is the same test without a branch per unit (the tag pull's hot loop).
        codes = frozenset(c & _UINT32 for c in sub.code_set) if sub is not None else frozenset()

        def unit_matcher(tags_code: int) -> bool:
            return (tags_code & _UINT32) in codes

        #: ``isMatchedByConsumeQueue`` for a tag subscription (ignore when
        #: :attr:`matches_all_units`)
        self.unit_matcher = unit_matcher
        self._expression = (
            filter_data.compiled_expression
            if sub is not None and not sub.class_filter_mode and not tag_type and filter_data is not None
            else None
        )
        #: whether :meth:`is_matched_by_commit_log` can ever say no (the store reads
        #: records' properties only then)
        self.filters_records = self._expression is not None

    @property
    def matches_all_units(self) -> bool:
        """True when :meth:`is_matched_by_consume_queue` is always True."""
        return self._match_all_units

    def is_matched_by_consume_queue(self, tags_code: int) -> bool:
        """``isMatchedByConsumeQueue`` for a unit's tags code."""
        return self._match_all_units or self.unit_matcher(tags_code)

    def is_matched_by_properties(self, properties: Mapping[str, str]) -> bool:
        """``isMatchedByCommitLog(null, properties)``: long polling's arrival check."""
        expression = self._expression
        return expression is None or expression.matches(properties)

    def is_matched_by_commit_log(self, record: memoryview | bytes) -> bool:
        """``isMatchedByCommitLog(msgBuffer, null)`` for one stored record."""
        expression = self._expression
        return expression is None or expression.matches(decode_record_properties(record))
