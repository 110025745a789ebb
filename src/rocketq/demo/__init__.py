"""rocketq.demo: the wallet pipeline behind ``rocketq demo`` (``make demo``).

An embedded cluster, a producer sharding wallet events by user, an orderly SMS notifier,
a Spark Structured Streaming job over the ``rocketmq`` connector that writes Parquet and
alerts, a consumer of the alerts, and a final report whose checks decide the exit status.
See :mod:`rocketq.demo.pipeline`.
"""

from __future__ import annotations

__all__: list[str] = []
