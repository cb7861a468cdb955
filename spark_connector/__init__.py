"""tslog's PySpark data source: ``spark.read.format("tslog")`` and ``readStream``.

Installed with the ``spark`` extra, ``format("tslog")`` works with no ``register`` call (the
top-level ``pyspark_tslog`` module exposes ``DefaultSource``, which PySpark discovers). Or:

    from tslog.spark_connector import register
    register(spark)            # registers the source and turns on Python filter pushdown

See docs/spark.md for options, schema, pushdown and streaming.
"""

from ._fetch import DataLossError, TslogReadError
from ._options import TslogOptionError
from ._planning import TslogPlanError
from .datasource import (
    FILTER_PUSHDOWN_CONF,
    TslogBatchReader,
    TslogDataSource,
    TslogPartition,
    TslogPushdownBatchReader,
    TslogStreamReader,
    spark_schema,
)


def register(spark, filter_pushdown: bool = True) -> None:
    """Register ``format("tslog")`` on ``spark``; with ``filter_pushdown`` also set
    ``spark.sql.python.filterPushdown.enabled=true`` so a ``where`` on ``timestamp`` is
    resolved through the time index."""
    if filter_pushdown:
        spark.conf.set(FILTER_PUSHDOWN_CONF, "true")
    spark.dataSource.register(TslogDataSource)


__all__ = [
    "DataLossError",
    "FILTER_PUSHDOWN_CONF",
    "TslogBatchReader",
    "TslogDataSource",
    "TslogOptionError",
    "TslogPartition",
    "TslogPlanError",
    "TslogPushdownBatchReader",
    "TslogReadError",
    "TslogStreamReader",
    "register",
    "spark_schema",
]
