"""A real local SparkSession for the whole test session, with the rocketmq format registered.

One session per test session (local[2], 2 shuffle partitions, no UI, no progress bars);
Python workers run this interpreter (``PYSPARK_PYTHON``) so they import this rocketq.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

import rocketq.spark


def build_session(app: str = "rocketq-tests") -> SparkSession:
    """The local session the Spark tests (and their helper processes) use."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    session = (
        SparkSession.builder.master("local[2]")
        .appName(app)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.driver.memory", "1g")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    rocketq.spark.register(session)
    return session


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = build_session()
    yield session
    session.stop()
