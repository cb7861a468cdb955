"""``kafka-reassign-partitions --list`` and ``kafka-leader-election`` against a reference
Apache Kafka and tslog's Kafka listener (see test_tools_topics.py): what the tools print must
match where one broker can answer the same (ListPartitionReassignments with nothing moving,
ElectLeaders where the preferred replica leads already). The moves themselves need a
cluster:
tests/integration/kafka/test_kafka_reassign_tools.py.
"""

from __future__ import annotations

import pytest

from tests.helpers.kafka_reference import run_tool
from tests.kafka_reference import normalize
from tests.kafka_reference.pairs import both, unique
from tests.kafka_reference.test_tools_topics import topics

pytestmark = [pytest.mark.kafka_reference, pytest.mark.slow]

REASSIGN = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
ELECTION = "org.apache.kafka.tools.LeaderElectionCommand"


def _run(side, main_class: str, *args: str) -> list[str]:
    done = run_tool(main_class, "--bootstrap-server", side.bootstrap, *args)
    return normalize.lines(done.stdout + done.stderr)


def test_nothing_moving_is_listed_alike_and_an_election_not_needed_is_said_alike(pair):
    topic = unique("elect")

    def session(side):
        topics(side, "--create", "--topic", topic, "--partitions", "2")
        return {"list": _run(side, REASSIGN, "--list"),
                "elect": _run(side, ELECTION, "--election-type", "PREFERRED",
                              "--topic", topic, "--partition", "0")}

    kafka, tslog = both(pair, session)
    assert kafka == tslog
    assert tslog["list"] == ["No partition reassignments found."]
    assert tslog["elect"] == [f"Valid replica already elected for partitions {topic}-0"]
