"""rocketq.spark: a PySpark data source and sink for rocketq topics (format ``rocketmq``).

Install with the ``spark`` extra (pyspark 4, pyarrow). Usage::

    import rocketq.spark
    rocketq.spark.register(spark)
    df = (spark.read.format("rocketmq")
          .option("nameserver", "127.0.0.1:9876").option("topic", "orders").load())

This package is the only place in rocketq that imports pyspark/pyarrow/numpy; the rest of
rocketq imports without them. :func:`register` imports the Spark classes when called, so
``import rocketq.spark`` stays cheap. See :mod:`rocketq.spark.options` for every option and
:mod:`rocketq.spark.offsets` for the JSON offsets.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql.session import SparkSession

__all__ = ["FORMAT", "register"]

#: The format name: ``spark.read.format("rocketmq")``.
FORMAT = "rocketmq"


def register(spark: SparkSession) -> None:
    """Register the ``rocketmq`` format with ``spark`` (one call per session)."""
    from rocketq.spark.datasource import register as _register

    _register(spark)
