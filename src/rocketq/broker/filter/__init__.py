"""rocketq.broker.filter: server-side SQL92 filtering (Java's ``org.apache.rocketmq.broker.filter``).

* :mod:`~rocketq.broker.filter.consumer_filter_manager` — ``ConsumerFilterManager`` and
  ``ConsumerFilterData``: the compiled SQL92 subscription of each (topic, group), kept
  current from heartbeats.
* :mod:`~rocketq.broker.filter.expression_message_filter` — ``ExpressionMessageFilter``:
  what a pull checks per consume-queue unit and per stored record.
"""

from __future__ import annotations

from rocketq.broker.filter.consumer_filter_manager import ConsumerFilterData, ConsumerFilterManager
from rocketq.broker.filter.expression_message_filter import ExpressionMessageFilter

__all__ = ["ConsumerFilterData", "ConsumerFilterManager", "ExpressionMessageFilter"]
