"""Auto-registration hook: PySpark registers ``DefaultSource`` of every top-level ``pyspark_*``
module it finds on the Python workers' path, so ``spark.read.format("tslog")`` works without a
``spark.dataSource.register`` call once tslog is installed with the ``spark`` extra."""

from tslog.spark_connector import TslogDataSource as DefaultSource

__all__ = ["DefaultSource"]
