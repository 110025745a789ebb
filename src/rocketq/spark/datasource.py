"""The ``rocketmq`` Spark format: a PySpark Python data source over rocketq topics.

``RocketMQDataSource`` (pyspark 4.3 ``DataSource``) is registered with
:func:`rocketq.spark.register` and serves ``spark.read``, ``spark.readStream``,
``df.write`` and ``df.writeStream``. Modelled on Spark's Kafka connector
(``KafkaSourceProvider``): a fixed read schema (:data:`READ_DDL`), options checked up
front (unknown ones are errors, see :mod:`rocketq.spark.options`), partitions that are
message queues and offsets that are JSON per queue.

Invariants: options are parsed on the driver when a reader or writer is created, so a bad
option fails the query before any task runs; a user-specified read schema must equal the
connector's (``spark.read.schema(...)`` cannot change how records decode).
"""

from __future__ import annotations

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.session import SparkSession
from pyspark.sql.types import (
    BinaryType,
    DataType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from rocketq.errors import IllegalArgumentError
from rocketq.spark.columnar import READ_COLUMNS
from rocketq.spark.options import include_properties, parse_read_options, parse_write_options
from rocketq.spark.reader import RocketMQReader, RocketMQStreamReader
from rocketq.spark.sink import check_write_columns
from rocketq.spark.writer import RocketMQStreamWriter, RocketMQWriter

__all__ = ["FORMAT", "READ_DDL", "RocketMQDataSource", "read_schema", "register"]

#: The format name: ``spark.read.format("rocketmq")``.
FORMAT = "rocketmq"

_TYPES: dict[str, DataType] = {
    "string": StringType(),
    "int": IntegerType(),
    "bigint": LongType(),
    "binary": BinaryType(),
    "timestamp": TimestampType(),
    "map<string,string>": MapType(StringType(), StringType(), valueContainsNull=False),
}


def read_schema(*, properties: bool = True) -> StructType:
    """The read schema (:data:`rocketq.spark.columnar.READ_COLUMNS` as a ``StructType``),
    without ``properties`` when ``properties`` is false (option ``includeProperties``)."""
    return StructType(
        [
            StructField(name, _TYPES[kind], nullable)
            for name, kind, nullable in READ_COLUMNS
            if properties or name != "properties"
        ]
    )


def _ddl(schema: StructType) -> str:
    return ", ".join(f"{f.name} {f.dataType.simpleString()}" for f in schema.fields)


#: The read schema as DDL (nullability aside: only ``keys`` and ``tags`` may be null).
READ_DDL = _ddl(read_schema())


def _check_schema(schema: StructType, properties: bool) -> None:
    ours = read_schema(properties=properties)
    if [(f.name, f.dataType) for f in schema.fields] != [(f.name, f.dataType) for f in ours.fields]:
        raise IllegalArgumentError(
            f"format rocketmq has a fixed schema ({_ddl(ours)}); do not pass a different one with .schema()"
        )


class RocketMQDataSource(DataSource):
    """The ``rocketmq`` data source (read, readStream, write, writeStream)."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> StructType:
        return read_schema(properties=include_properties(self.options))

    def reader(self, schema: StructType) -> DataSourceReader:
        options = parse_read_options(self.options, streaming=False)
        _check_schema(schema, options.include_properties)
        return RocketMQReader(options)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:  # noqa: N802 - pyspark API
        options = parse_read_options(self.options, streaming=True)
        _check_schema(schema, options.include_properties)
        return RocketMQStreamReader(options)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        options = parse_write_options(self.options)
        check_write_columns({f.name: f.dataType.simpleString() for f in schema.fields}, options.topic)
        return RocketMQWriter(options)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:  # noqa: N802 - pyspark API
        options = parse_write_options(self.options)
        check_write_columns({f.name: f.dataType.simpleString() for f in schema.fields}, options.topic)
        return RocketMQStreamWriter(options)


def register(spark: SparkSession) -> None:
    """Register the ``rocketmq`` format with ``spark`` (``spark.dataSource.register``)."""
    spark.dataSource.register(RocketMQDataSource)
