"""The pieces of ``bench/kafka.py`` (Apache Kafka and tslog side by side): raw Kafka
protocol loops (``raw_kafka``), each system's clients and tools (``clients``), and the
lookup-by-time rows at large sizes (``lookups``)."""
