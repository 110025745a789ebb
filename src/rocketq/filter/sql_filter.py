"""Compiled SQL92 filters: ``SqlFilter``, ``FilterFactory`` and the parse cache.

Mirrors ``org.apache.rocketmq.filter.SqlFilter``, ``FilterFactory`` and the cache of
``SelectorParser.parse`` (RocketMQ 4.9.7): the last 100 distinct texts are kept, failures
included, so a broker compiling the same subscription for every pull parses it once.

:class:`SqlExpression` is immutable and thread-safe; :meth:`SqlExpression.matches` is
what ``ExpressionMessageFilter.isMatchedByCommitLog`` does with it: only an evaluation
that yields TRUE matches; null, FALSE and an evaluation error do not.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping

from rocketq.filter.errors import FilterEvaluationError, FilterParseError
from rocketq.filter.expression import Expr
from rocketq.filter.selector_parser import parse_selector
from rocketq.protocol.heartbeat import ExpressionType

__all__ = ["SqlExpression", "compile_expression", "compile_sql"]

log = logging.getLogger(__name__)

#: ``PARSE_CACHE = CacheBuilder.newBuilder().maximumSize(100)``
_CACHE_SIZE = 100


class SqlExpression:
    """One compiled SQL92 selector (Java's ``BooleanExpression`` from ``SqlFilter``)."""

    __slots__ = ("_evaluate", "expression")

    def __init__(self, expression: str, root: Expr) -> None:
        self.expression = expression
        self._evaluate = root.evaluate

    def evaluate(self, properties: Mapping[str, object]) -> bool | None:
        """TRUE/FALSE, or None for SQL null; raises :class:`FilterEvaluationError`."""
        result = self._evaluate(properties)
        return result if result is None or type(result) is bool else None

    def matches(self, properties: Mapping[str, object]) -> bool:
        """True only when the expression evaluates to TRUE (errors are no match)."""
        try:
            return self._evaluate(properties) is True
        except FilterEvaluationError as exc:
            log.debug("filter %r failed on %s: %s", self.expression, properties, exc)
            return False

    def __repr__(self) -> str:
        return f"SqlExpression({self.expression!r})"


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _cached(expression: str) -> SqlExpression | FilterParseError:
    try:
        return SqlExpression(expression, parse_selector(expression))
    except FilterParseError as exc:
        return exc
    except RecursionError:
        return FilterParseError("java.lang.StackOverflowError: expression nested too deeply")


def compile_sql(expression: str) -> SqlExpression:
    """``SqlFilter.compile``: parse (cached); raises :class:`FilterParseError`."""
    if not isinstance(expression, str):
        raise FilterParseError(f"expression must be a str, not {type(expression).__name__}")
    result = _cached(expression)
    if isinstance(result, FilterParseError):
        raise FilterParseError(str(result))
    return result


def compile_expression(expression_type: str | None, expression: str) -> SqlExpression:
    """``FilterFactory.INSTANCE.get(type).compile(expression)``: only SQL92 is registered.

    Any other type raises :class:`FilterParseError` (Java: a null filter, then a
    NullPointerException the callers report as a parse failure).
    """
    if expression_type != ExpressionType.SQL92.value:
        raise FilterParseError(f"java.lang.NullPointerException: no filter for type {expression_type}")
    return compile_sql(expression)
