"""Errors of the SQL92 filter (``MQFilterException`` and evaluation failures).

* :class:`FilterParseError` — the expression is not valid SQL92 for RocketMQ 4.9.7
  (``SelectorParser.parse`` throws ``MQFilterException`` wrapping a ``ParseException``,
  ``TokenMgrError`` or ``RuntimeException``). Its message reads like the cause's
  ``toString`` in Java (the remark a broker answers CHECK_CLIENT_CONFIG with); the
  "Was expecting one of" list JavaCC appends is not reproduced.
* :class:`FilterEvaluationError` — one message's properties made the evaluation fail
  (Java: ``NumberFormatException`` and friends out of ``evaluate``); the message simply
  does not match (``ExpressionMessageFilter.isMatchedByCommitLog``).
"""

from __future__ import annotations

from rocketq.errors import IllegalArgumentError, RocketqError

__all__ = ["FilterEvaluationError", "FilterParseError"]


class FilterParseError(IllegalArgumentError):
    """An SQL92 expression Java's ``SelectorParser`` rejects (``MQFilterException``)."""


class FilterEvaluationError(RocketqError):
    """An expression failed on one message's properties; the message does not match."""
