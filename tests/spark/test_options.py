"""Option parsing, precedence and range splitting: pure Python, no Spark, no broker."""

from __future__ import annotations

import json

import pytest

from tslog.client import TopicPartition
from tslog.spark_connector._options import TslogOptionError, parse_options
from tslog.spark_connector._planning import offsets_json, split_ranges

TEN_UTC = 1795341600000  # 2026-11-22T10:00:00Z
BASE = {"bootstrap": "127.0.0.1:9092", "topic": "events"}


def parse(streaming=False, **options):
    return parse_options({**BASE, **{k.lower(): v for k, v in options.items()}},
                         streaming=streaming)


def test_defaults():
    batch = parse()
    assert (batch.starting.kind, batch.ending.kind) == ("earliest", "latest")
    assert parse(streaming=True).starting.kind == "latest"
    assert batch.fail_on_data_loss and not batch.include_headers
    assert batch.timestamp_type == "append" and batch.strategy == "error"


def test_precedence_per_side():
    opts = parse(startingTimestamp="1763800000000",
                 startingOffsetsByTimestamp=json.dumps({"events": {"0": 5}}),
                 startingOffsets="earliest",
                 endingOffsetsByTimestamp=json.dumps({"events": {"0": "2026-11-22T10:00:00Z"}}),
                 endingOffsets="latest")
    assert (opts.starting.kind, opts.starting.value) == ("timestamp", 1763800000000)
    assert opts.ending.kind == "timestamps"
    assert opts.ending.value == {"events": {0: TEN_UTC}}


def test_time_forms():
    assert parse(startingTimestamp="2026-11-22T10:00:00Z").starting.value == TEN_UTC
    assert parse(startingTimestamp="2026-11-22T11:00:00+01:00").starting.value == TEN_UTC
    assert parse(startingTimestamp="1000").starting.value == 1000  # Kafka's form: any long
    with pytest.raises(TslogOptionError, match="startingTimestamp"):
        parse(startingTimestamp="yesterday-ish")


@pytest.mark.parametrize("options, message", [
    ({"startingOffsets": "latest"}, "not valid for a batch read"),
    ({"endingOffsets": "earliest"}, "not valid for a batch read"),
    ({"startingOffsets": json.dumps({"events": {"0": -1}})}, "partition 0"),
    ({"startingOffsets": "{not json"}, "not valid JSON"),
    ({"startingOffsets": json.dumps({"events": {"x": 1}})}, "not a partition number"),
    ({"startingTimestamp": "2000", "endingTimestamp": "1000"}, "after endingTimestamp"),
    ({"startingOffsets": json.dumps({"events": {"0": 9}}),
      "endingOffsets": json.dumps({"events": {"0": 3}})}, "starting offset 9 is after"),
    ({"startingOffsets": json.dumps({"events": {"0": 1}}),
      "endingOffsets": json.dumps({"events": {"1": 3}})}, "same partitions"),
    ({"timestampType": "wallclock"}, "timestampType"),
    ({"startingOffsetsByTimestampStrategy": "skip"}, "error or latest"),
    ({"minOffsetsPerTrigger": "10", "maxOffsetsPerTrigger": "5"}, "must be <="),
    ({"minPartitions": "0"}, "positive integer"),
    ({"startingTimestmap": "1"}, "unknown option"),
])
def test_batch_errors_name_the_option(options, message):
    with pytest.raises(TslogOptionError, match=message):
        parse(**options)


def test_subscription_errors():
    with pytest.raises(TslogOptionError, match="exactly one"):
        parse_options({"bootstrap": "h:1", "topic": "a", "topics": "a,b"}, streaming=False)
    with pytest.raises(TslogOptionError, match="exactly one"):
        parse_options({"bootstrap": "h:1"}, streaming=False)
    with pytest.raises(TslogOptionError, match="bootstrap is required"):
        parse_options({"topic": "a"}, streaming=False)
    with pytest.raises(TslogOptionError, match="regular expression"):
        parse_options({"bootstrap": "h:1", "topicPattern": "("}, streaming=False)


def test_stream_refuses_ending_options():
    for key in ("endingOffsets", "endingTimestamp", "endingOffsetsByTimestamp"):
        with pytest.raises(TslogOptionError, match="batch reads only"):
            parse(streaming=True, **{key: "latest" if key == "endingOffsets" else "1000"})
    opts = parse(streaming=True, maxTriggerDelay="30s", minOffsetsPerTrigger="5")
    assert opts.max_trigger_delay_ms == 30_000


def test_split_ranges():
    a, b = TopicPartition("t", 0), TopicPartition("t", 1)
    assert split_ranges([(a, 0, 100), (b, 5, 5)], None, None) == [(a, 0, 100)]
    pieces = split_ranges([(a, 0, 100), (b, 0, 10)], None, 30)
    assert pieces == [(a, 0, 25), (a, 25, 50), (a, 50, 75), (a, 75, 100), (b, 0, 10)]
    pieces = split_ranges([(a, 0, 90), (b, 0, 10)], 5, None)
    assert sum(e - s for _, s, e in pieces) == 100 and len(pieces) >= 5
    assert all(e > s for _, s, e in pieces)


def test_offsets_json_is_sorted_and_string_keyed():
    offsets = {TopicPartition("b", 10): 1, TopicPartition("b", 2): 3, TopicPartition("a", 0): 7}
    assert json.dumps(offsets_json(offsets)) == '{"a": {"0": 7}, "b": {"2": 3, "10": 1}}'
