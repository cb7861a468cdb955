"""Out-of-range topic configs against a real broker (issue 20, item 6).

A user who asks for ``segment.index.bytes=2^40`` (3 TiB of sparse index files) or a
100-digit ``retention.ms`` gets INVALID_CONFIG, no topic and no change, and the broker keeps
serving. A broker whose ``[log]`` defaults are out of range does not start; a topic override
stored by an earlier version that accepted it is skipped with a warning, so the broker starts.
"""

from __future__ import annotations

import json

import pytest

from tests.helpers.wire import Wire, batch
from tslog.client import Admin
from tslog.client.errors import InvalidConfigError
from tslog.protocol.errors import ErrorCode
from tslog.protocol.messages import ApiKey

pytestmark = pytest.mark.timeout(90)

HUGE_INDEX = str(2**40)
HUNDRED_DIGITS = "9" * 100


def _topics(wire: Wire) -> set[str]:
    body = wire.request(ApiKey.METADATA, {"topics": None})
    return {entry["topic"] for entry in body["topics"]}


@pytest.mark.parametrize("configs", [
    {"segment.index.bytes": HUGE_INDEX},
    {"retention.ms": HUNDRED_DIGITS},
    {"retention.ms": "-" + HUNDRED_DIGITS},
    {"segment.bytes": str(2**31)},
    {"segment.index.bytes": HUGE_INDEX, "retention.ms": HUNDRED_DIGITS},
])
def test_create_topic_with_an_out_of_range_config_is_refused(broker, configs):
    with Wire(broker.host, broker.port) as wire:
        response = wire.request(ApiKey.CREATE_TOPICS, {"topics": [
            {"topic": "big", "partitions": 1, "replication_factor": 1, "configs": configs}],
            "timeout_ms": 10_000})
        result = response["topics"][0]
        assert result["error_code"] == ErrorCode.INVALID_CONFIG
        for key in configs:
            assert key in result["error_message"]
        assert len(result["error_message"]) < 400  # the 100 digits are not echoed back whole
        assert "big" not in _topics(wire)
    assert not list(broker.data_dir.glob("big-*"))
    # still serving: a normal topic works
    with Wire(broker.host, broker.port) as wire:
        assert wire.create_topic("fine", configs={"segment.index.bytes": str(1 << 30)}) == 0
        assert wire.produce("fine", 0, batch([b"a", b"b"]))["error_code"] == 0
        assert wire.log_end_offset("fine") == 2
    assert broker.running and "Traceback" not in broker.log_text()


def test_alter_configs_out_of_range_is_refused_and_changes_nothing(broker):
    with Admin(broker.bootstrap) as admin:
        admin.create_topic("conf", config={"retention.ms": "1000000"})
        with pytest.raises(InvalidConfigError):
            admin.alter_configs("conf", {"segment.ms": "60000", "retention.ms": HUNDRED_DIGITS})
        with pytest.raises(InvalidConfigError):
            admin.alter_configs("conf", {"segment.index.bytes": HUGE_INDEX}, validate_only=True)
        configs = admin.describe_configs("conf")
        assert configs["retention.ms"].value == "1000000"
        assert configs["segment.ms"].source != "topic"
        assert configs["segment.index.bytes"].source != "topic"
        admin.alter_configs("conf", {"retention.ms": "-1"})  # the lower bound itself is fine
        assert admin.describe_configs("conf")["retention.ms"].value == "-1"
    assert broker.running


@pytest.mark.parametrize("name,value", [
    ("TSLOG_LOG_SEGMENT_INDEX_BYTES", HUGE_INDEX),
    ("TSLOG_LOG_RETENTION_MS", HUNDRED_DIGITS),
])
def test_a_broker_with_out_of_range_log_defaults_does_not_start(broker_factory, name, value):
    broker = broker_factory(env={name: value}, start=False)
    broker.launch()
    assert broker.exit_code() != 0
    text = broker.log_text()
    assert name.removeprefix("TSLOG_LOG_").lower().replace("_", ".") in text
    assert "must be in" in text


def test_a_stored_override_that_became_invalid_is_skipped_with_a_warning(broker):
    with Wire(broker.host, broker.port) as wire:
        assert wire.create_topic("old", configs={"segment.index.bytes": "4096",
                                                 "retention.ms": "3600000"}) == 0
        assert wire.produce("old", 0, batch([b"kept-1", b"kept-2"]))["error_code"] == 0
    broker.terminate()
    # as an earlier version that accepted anything would have stored it
    path = broker.data_dir / "__meta" / "topics.json"
    document = json.loads(path.read_text(encoding="utf-8"))
    [entry] = [entry for entry in document["topics"] if entry["name"] == "old"]
    entry["configs"]["segment.index.bytes"] = HUGE_INDEX
    entry["configs"]["retention.ms"] = HUNDRED_DIGITS
    entry["configs"]["flush.ms"] = "1000"  # a valid override next to them is kept
    path.write_text(json.dumps(document), encoding="utf-8")

    broker.start()
    text = broker.log_text()
    assert "segment.index.bytes" in text and "retention.ms" in text
    assert "ignoring a stored topic config" in text
    with Wire(broker.host, broker.port) as wire:
        assert wire.log_end_offset("old") == 2
        assert wire.produce("old", 0, batch([b"kept-3"]))["error_code"] == 0
        assert wire.log_end_offset("old") == 3
    with Admin(broker.bootstrap) as admin:
        configs = admin.describe_configs("old")
        assert configs["segment.index.bytes"].value == str(10 << 20)  # the default is served
        assert configs["flush.ms"].value == "1000"
        # the operator repairs it through the API
        admin.alter_configs("old", {"segment.index.bytes": None, "retention.ms": "-1"})
        configs = admin.describe_configs("old")
        assert configs["retention.ms"].value == "-1"
    assert "Traceback" not in broker.log_text()
