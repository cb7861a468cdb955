"""Apache Kafka's own command-line tools against a reference Kafka and against tslog's Kafka
listener, the same scripted session on both: what a user sees must be the same, except what
docs/kafka.md's "What differs" lists (``normalize`` says which rule covers each).

kafka-topics (create, list, describe, alter partitions, delete), kafka-console-producer
(idempotent by default, keys, headers), kafka-console-consumer (--from-beginning,
--partition/--offset, --max-messages, print.timestamp/print.key) and kafka-get-offsets
(--time -1, -2 and a time in ms).
"""

from __future__ import annotations

import re

import pytest

from tests.helpers.kafka_reference import (
    CONSOLE_CONSUMER,
    CONSOLE_PRODUCER,
    GET_OFFSETS,
    TOPICS,
    run_tool,
)
from tests.kafka_reference import normalize
from tests.kafka_reference.pairs import both, unique

pytestmark = [pytest.mark.kafka_reference, pytest.mark.slow]


def tool(side, main_class: str, *args: str, input: str | None = None) -> str:
    """Run a tool against ``side``; its stdout (a failure shows stderr too)."""
    done = run_tool(main_class, "--bootstrap-server", side.bootstrap, *args, input=input)
    assert done.returncode == 0, f"{side.name}: {main_class} {args}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def topics(side, *args: str) -> str:
    return tool(side, TOPICS, *args)


def produce(side, topic: str, text: str) -> str:
    """kafka-console-producer with keys and headers (``h:v,h2:v2<TAB>key<TAB>value``)."""
    return tool(side, CONSOLE_PRODUCER, "--topic", topic, "--reader-property", "parse.key=true",
                "--reader-property", "parse.headers=true", input=text)


def consume(side, topic: str, *args: str) -> str:
    return tool(side, CONSOLE_CONSUMER, "--topic", topic, "--formatter-property",
                "print.key=true", "--formatter-property", "print.timestamp=true",
                "--formatter-property", "print.partition=true", "--formatter-property",
                "print.offset=true", "--formatter-property", "print.headers=true", *args)


def test_topics_create_list_describe_alter_delete(pair):
    name = unique("topics")

    def session(side):
        out = {"create": topics(side, "--create", "--topic", name, "--partitions", "2",
                                "--config", "retention.ms=86400000")}
        out["list"] = [t for t in normalize.lines(topics(side, "--list")) if t == name]
        out["describe"] = normalize.topic_description(topics(side, "--describe", "--topic",
                                                             name))
        out["alter"] = topics(side, "--alter", "--topic", name, "--partitions", "3")
        out["grown"] = normalize.topic_description(topics(side, "--describe", "--topic", name))
        out["delete"] = topics(side, "--delete", "--topic", name)
        out["after"] = [t for t in normalize.lines(topics(side, "--list")) if t == name]
        return out

    kafka, tslog = both(pair, session)
    assert kafka == tslog
    assert tslog["list"] == [name] and tslog["after"] == []
    assert tslog["grown"][0].startswith(f"Topic: {name}\tPartitionCount: 3")
    assert "retention.ms=86400000" in tslog["describe"][0]


def test_console_producer_and_consumer(pair):
    """Keys and headers through the console producer (an idempotent producer by default in
    Kafka 4), read back with every print option, from the beginning, from an offset of one
    partition, and a bounded number of messages. The topics are LogAppendTime on both sides
    (tslog's default, Kafka's by config), so the type printed matches; the times differ."""
    name = unique("console")
    lines_in = "".join(f"src:web,n:{i}\tk{i}\tv{i}\n" for i in range(6))

    def session(side):
        topics(side, "--create", "--topic", name, "--partitions", "2",
               "--config", "message.timestamp.type=LogAppendTime")
        produce(side, name, lines_in)
        every = consume(side, name, "--from-beginning", "--max-messages", "6")
        partition_1 = consume(side, name, "--partition", "1", "--offset", "1",
                              "--max-messages", "1")
        return [normalize.timestamps(text) for text in (every, partition_1)]

    kafka, tslog = both(pair, session)
    assert kafka == tslog
    every = sorted(normalize.lines(tslog[0]))
    assert len(every) == 6 and all(line.startswith("LogAppendTime:T\tPartition:")
                                   for line in every)
    assert {line.split("\t", 3)[3] for line in every} == {
        f"src:web,n:{i}\tk{i}\tv{i}" for i in range(6)}
    assert len(normalize.lines(tslog[1])) == 1 and "\tOffset:1\t" in tslog[1]


def test_get_offsets_latest_earliest_and_by_time(pair):
    """Two produces, then the offsets at -1 (latest), -2 (earliest) and at the second
    produce's timestamp (read from each side's own records: the clocks differ), which must
    name its first record."""
    name = unique("offsets")

    def session(side):
        topics(side, "--create", "--topic", name, "--partitions", "1",
               "--config", "message.timestamp.type=LogAppendTime")
        produce(side, name, "h:1\ta\tfirst\nh:2\tb\tfirst\n")
        produce(side, name, "h:3\tc\tsecond\n")
        printed = consume(side, name, "--from-beginning", "--max-messages", "3")
        second = re.search(r"LogAppendTime:(\d+)\tPartition:0\tOffset:2\t", printed).group(1)
        return [normalize.lines(tool(side, GET_OFFSETS, "--topic", name, "--time", when))
                for when in ("-1", "-2", second, str(int(second) + 1))]

    kafka, tslog = both(pair, session)
    assert kafka == tslog
    assert tslog == [[f"{name}:0:3"], [f"{name}:0:0"], [f"{name}:0:2"], []]
