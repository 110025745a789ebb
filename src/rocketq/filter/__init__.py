"""rocketq.filter: RocketMQ 4.9.7's SQL92 message filter, in pure Python.

Mirrors Java's ``rocketmq-filter`` module: a lazily lexing tokenizer
(:mod:`~rocketq.filter.lexer`), a hand-written parser with the grammar's precedence and
quirks (:mod:`~rocketq.filter.selector_parser`), expression nodes with Java's three-valued
logic and value conversions (:mod:`~rocketq.filter.expression`,
:mod:`~rocketq.filter.values`) and the cached compiler (:mod:`~rocketq.filter.sql_filter`).
It imports nothing but ``rocketq.errors`` and ``rocketq.protocol``, so the broker (which
filters pulls) and the client (which checks a selector before subscribing) share it.

>>> compile_sql("a BETWEEN 3 AND 5 AND region IN ('eu', 'us')").matches({"a": "4", "region": "eu"})
True
"""

from __future__ import annotations

from rocketq.filter.errors import FilterEvaluationError, FilterParseError
from rocketq.filter.sql_filter import SqlExpression, compile_expression, compile_sql

__all__ = [
    "FilterEvaluationError",
    "FilterParseError",
    "SqlExpression",
    "compile_expression",
    "compile_sql",
]
