"""tslog's PySpark data source: ``spark.read.format("tslog")`` and ``readStream``.

Installed with the ``spark`` extra, ``format("tslog")`` works with no ``register`` call (the
top-level ``pyspark_tslog`` module exposes ``DefaultSource``, which PySpark discovers). Or:

    from tslog.spark_connector import register
    register(spark)            # registers the source explicitly, checking the workers first

See docs/spark.md for options, schema and streaming.
"""

from ._fetch import DataLossError, TslogReadError
from ._options import TslogOptionError
from ._planning import TslogPlanError
from .datasource import (
    TslogBatchReader,
    TslogDataSource,
    TslogPartition,
    TslogStreamReader,
    spark_schema,
)
from .workers import TslogWorkerError, check_workers


def register(spark) -> None:
    """Register ``format("tslog")`` on ``spark`` explicitly (discovery does it without this
    call), after checking that Spark's Python workers can import tslog: a session whose
    workers run another interpreter fails here with one line that says how to fix it,
    instead of with a traceback from the first read."""
    check_workers(spark)
    spark.dataSource.register(TslogDataSource)


__all__ = [
    "DataLossError",
    "TslogBatchReader",
    "TslogDataSource",
    "TslogOptionError",
    "TslogPartition",
    "TslogPlanError",
    "TslogReadError",
    "TslogStreamReader",
    "TslogWorkerError",
    "check_workers",
    "register",
    "spark_schema",
]
