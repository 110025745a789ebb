"""A streaming driver in its own process, for the SIGKILL test of test_connector.py.

``python -m tests.spark.stream_driver_proc NAMESRV TOPIC OUT CHECKPOINT``: reads TOPIC
with small micro-batches into a Parquet file sink until it is killed.
"""

from __future__ import annotations

import sys

from tests.spark.conftest import build_session


def main(namesrv: str, topic: str, out: str, checkpoint: str) -> None:
    spark = build_session("rocketq-killed-driver")
    query = (
        spark.readStream.format("rocketmq")
        .option("nameserver", namesrv)
        .option("topic", topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "40")
        .load()
        .writeStream.format("parquet")
        .option("path", out)
        .option("checkpointLocation", checkpoint)
        .trigger(processingTime="200 milliseconds")
        .start()
    )
    query.awaitTermination()


if __name__ == "__main__":
    main(*sys.argv[1:5])
