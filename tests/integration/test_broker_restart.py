"""Restarts of a real broker process: what survives SIGTERM, SIGKILL and a clock stepped back.

Raw-socket produce/fetch (tests/helpers/wire.py), so these tests do not depend on the client.
"""

from __future__ import annotations

import pytest

from tests.helpers.wire import Wire, batch, split_values
from tslog.protocol.messages import ApiKey

pytestmark = pytest.mark.timeout(120)


def all_values(wire: Wire, topic: str, partition: int = 0) -> list[tuple[int, bytes]]:
    out, offset = [], 0
    while True:
        fetched = wire.fetch(topic, partition, offset)
        assert fetched["error_code"] == 0
        values = [(o, v) for o, v in split_values(fetched["records"]) if o >= offset]
        if not values:
            return out
        out.extend(values)
        offset = values[-1][0] + 1


def test_sigterm_restart_keeps_topics_records_configs_and_offsets(broker):
    with Wire(broker.host, broker.port) as wire:
        assert wire.create_topic("events", 2, {"retention.ms": "86400000"}) == 0
        for i in range(20):
            assert wire.produce("events", i % 2, batch([b"v%d" % i]), acks=1)["error_code"] == 0
        commit = {"group_id": "replay", "topics": [{"topic": "events", "partitions": [
            {"partition": 1, "offset": 7, "metadata": "where I was"}]}]}
        assert wire.request(ApiKey.OFFSET_COMMIT, commit)["topics"][0]["partitions"][0][
            "error_code"] == 0
        before = [all_values(wire, "events", p) for p in (0, 1)]
    broker.restart()  # SIGTERM, asserts exit 0, starts again
    assert "recovered" not in broker.log_text()  # clean shutdown: no recovery needed
    with Wire(broker.host, broker.port) as wire:
        assert [all_values(wire, "events", p) for p in (0, 1)] == before
        fetched = wire.request(ApiKey.OFFSET_FETCH, {"group_id": "replay", "topics": None})
        assert fetched["topics"][0]["partitions"][0]["offset"] == 7
        described = wire.request(ApiKey.DESCRIBE_CONFIGS,
                                 {"resources": [{"type": "topic", "name": "events"}]})
        configs = {c["name"]: c for c in described["resources"][0]["configs"]}
        assert configs["retention.ms"]["value"] == "86400000"
        assert configs["retention.ms"]["source"] == "topic"
        assert wire.produce("events", 0, batch([b"after"]), acks=1)["base_offset"] == 10


def test_sigkill_after_durable_acks_loses_nothing_acknowledged(broker):
    acknowledged = []
    with Wire(broker.host, broker.port) as wire:
        assert wire.create_topic("events") == 0
        for i in range(50):
            result = wire.produce("events", 0, batch([b"durable-%d" % i, b"pair-%d" % i]))
            assert result["error_code"] == 0
            acknowledged.append((result["base_offset"], b"durable-%d" % i))
        # unacknowledged tail: acks=1 batches that may or may not survive
        for i in range(5):
            wire.produce("events", 0, batch([b"maybe-%d" % i]), acks=1)
    broker.restart(kill=True)
    with Wire(broker.host, broker.port) as wire:
        values = dict(all_values(wire, "events"))
        for offset, value in acknowledged:
            assert values.get(offset) == value
        end = wire.log_end_offset("events")
        assert end >= 100
        assert wire.produce("events", 0, batch([b"next"]))["base_offset"] == end


@pytest.mark.parametrize("stop", ["sigterm", "sigkill"])
def test_log_append_time_never_decreases_when_the_clock_steps_back(broker_factory, stop):
    broker = broker_factory(env={"TSLOG_TEST_CLOCK_OFFSET_MS": "0"})
    with Wire(broker.host, broker.port) as wire:
        assert wire.create_topic("events") == 0
        first = wire.produce("events", 0, batch([b"before"]))
    # Ten minutes back: inside message.timestamp.after.max.ms, so the batch is accepted.
    broker.restart(kill=stop == "sigkill", env={"TSLOG_TEST_CLOCK_OFFSET_MS": "-600000"})
    with Wire(broker.host, broker.port) as wire:
        second = wire.produce("events", 0, batch([b"after"]))
        assert second["error_code"] == 0
        assert second["log_append_time"] >= first["log_append_time"]
        third = wire.produce("events", 0, batch([b"later"]))
        assert third["log_append_time"] >= second["log_append_time"]
        # the time index still answers: the first record at or after the first LAT
        found = wire.list_offset("events", 0, first["log_append_time"])
        assert found["offset"] == 0
        latest = wire.list_offset("events", 0, -3)
        assert latest["timestamp"] == third["log_append_time"]
