"""One Apache Kafka (the reference) and one tslog broker with its Kafka listener, shared by
the whole session: a JVM broker takes 10-40 s to start on a loaded 2-core machine, and every
test here names topics and groups of its own (``pairs.unique``).

``pair`` yields both (``pairs.Pair``); ``pairs.both(pair, run)`` runs one session against each
at once.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.helpers.broker_process import BrokerProcess, free_port
from tests.helpers.kafka_reference import KafkaReference, jars
from tests.kafka_reference.pairs import Pair, Side


@pytest.fixture(scope="session")
def pair(tmp_path_factory):
    jars("broker")  # fetched once, before either side starts
    base = tmp_path_factory.mktemp("kafka-reference")
    kafka_port = free_port()
    tslog = BrokerProcess(base / "tslog", args=["--kafka-listen", f"127.0.0.1:{kafka_port}"])
    reference = KafkaReference(base / "kafka")
    with ThreadPoolExecutor(2) as pool:
        started = [pool.submit(tslog.start), pool.submit(reference.start)]
        try:
            for future in started:
                future.result()
        except BaseException:
            tslog.stop()
            reference.stop()
            raise
    yield Pair(Side("kafka", reference.bootstrap), Side("tslog", f"127.0.0.1:{kafka_port}"),
               tslog.bootstrap)
    reference.stop()
    tslog.cleanup()
