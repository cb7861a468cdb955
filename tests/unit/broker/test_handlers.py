"""Request handlers called directly: what a client gets back for each API, without sockets."""

from __future__ import annotations

import asyncio

import pytest

from tests.helpers.handlers import call
from tests.helpers.wire import batch, split_values
from tslog.protocol.errors import ErrorCode
from tslog.protocol.messages import ApiKey
from tslog.protocol.records import build_batch

pytestmark = pytest.mark.timeout(30)




async def create(broker, topic="t", partitions=1, replication_factor=1, configs=None):
    body = {"topics": [{"topic": topic, "partitions": partitions,
                        "replication_factor": replication_factor, "configs": configs or {}}],
            "timeout_ms": 1000}
    return (await call(broker, ApiKey.CREATE_TOPICS, body))["topics"][0]


def produce_body(topic, partition, records, acks=1, timeout_ms=5000):
    return {"acks": acks, "timeout_ms": timeout_ms, "topics": [
        {"topic": topic, "partitions": [{"partition": partition, "records": records}]}]}


async def produce(broker, topic, partition, records, acks=1):
    response = await call(broker, ApiKey.PRODUCE, produce_body(topic, partition, records, acks))
    return response["topics"][0]["partitions"][0]


def fetch_body(topic, partition, offset, max_bytes=1 << 20, max_wait_ms=0, min_bytes=0):
    return {"replica_id": -1, "max_wait_ms": max_wait_ms, "min_bytes": min_bytes,
            "max_bytes": max_bytes, "topics": [{"topic": topic, "partitions": [
                {"partition": partition, "fetch_offset": offset, "max_bytes": max_bytes}]}]}


async def fetch(broker, topic, partition, offset, **kwargs):
    response = await call(broker, ApiKey.FETCH, fetch_body(topic, partition, offset, **kwargs))
    return response["topics"][0]["partitions"][0]


async def list_offset(broker, topic, partition, timestamp, timestamp_type="append"):
    body = {"replica_id": -1, "timestamp_type": timestamp_type, "topics": [
        {"topic": topic, "partitions": [{"partition": partition, "timestamp": timestamp}]}]}
    response = await call(broker, ApiKey.LIST_OFFSETS, body)
    return response["topics"][0]["partitions"][0]


# ------------------------------------------------------------------------------ admin APIs


async def test_api_versions_lists_every_api(broker):
    response = await call(broker, ApiKey.API_VERSIONS, {})
    assert {entry["api_key"] for entry in response["api_keys"]} == set(ApiKey)


@pytest.mark.parametrize("topic,partitions,rf,configs,code", [
    ("ok", 3, 1, {}, ErrorCode.NONE),
    ("bad name!", 1, 1, {}, ErrorCode.INVALID_TOPIC_EXCEPTION),
    ("..", 1, 1, {}, ErrorCode.INVALID_TOPIC_EXCEPTION),
    ("x" * 250, 1, 1, {}, ErrorCode.INVALID_TOPIC_EXCEPTION),
    ("zero", 0, 1, {}, ErrorCode.INVALID_PARTITIONS),
    ("rf", 1, 3, {}, ErrorCode.INVALID_REPLICATION_FACTOR),
    ("cfg", 1, 1, {"retention.mss": "1"}, ErrorCode.INVALID_CONFIG),
    ("cfg2", 1, 1, {"retention.ms": "soon"}, ErrorCode.INVALID_CONFIG),
])
async def test_create_topic_answers(broker, topic, partitions, rf, configs, code):
    result = await create(broker, topic, partitions, rf, configs)
    assert result["error_code"] == code
    assert (result["error_message"] is None) == (code == ErrorCode.NONE)
    assert (topic in broker.topics.topics) == (code == ErrorCode.NONE)


async def test_create_existing_topic_and_default_partition_count(make_broker):
    broker = make_broker(num_partitions=4)
    assert (await create(broker, "t", partitions=-1))["error_code"] == 0
    assert broker.topics.topics["t"].partitions == 4
    assert (await create(broker, "t"))["error_code"] == ErrorCode.TOPIC_ALREADY_EXISTS


async def test_a_create_the_disk_refuses_half_way_leaves_nothing_behind(make_broker,
                                                                       monkeypatch):
    from tslog.broker import topics as topics_module

    broker = make_broker()
    real, made = topics_module.PartitionLog, []

    def second_partition_fails(directory, *args):
        if len(made) == 1:
            raise OSError(28, "No space left on device")
        made.append(real(directory, *args))
        return made[-1]

    monkeypatch.setattr(topics_module, "PartitionLog", second_partition_fails)
    result = await create(broker, "t", 3)
    assert result["error_code"] == ErrorCode.KAFKA_STORAGE_ERROR
    assert "No space left" in result["error_message"]
    assert "t" not in broker.topics.topics and not broker.topics.logs
    assert not made[0].directory.exists()  # the partition made before the failure is gone
    monkeypatch.setattr(topics_module, "PartitionLog", real)
    broker.close()
    reopened = make_broker()
    assert "t" not in reopened.topics.topics  # no record was left either
    assert (await create(reopened, "t", 3))["error_code"] == 0


async def test_metadata_lists_topics_and_flags_unknown_ones(broker):
    await create(broker, "a", 2)
    everything = await call(broker, ApiKey.METADATA, {"topics": None})
    assert [t["topic"] for t in everything["topics"]] == ["a"]
    assert [p["partition"] for p in everything["topics"][0]["partitions"]] == [0, 1]
    assert everything["brokers"] == [{"node_id": 0, "host": "127.0.0.1", "port": 9092}]
    named = await call(broker, ApiKey.METADATA, {"topics": ["a", "nope", "bad/name"]})
    codes = [t["error_code"] for t in named["topics"]]
    assert codes == [0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.INVALID_TOPIC_EXCEPTION]


async def test_topics_survive_reopen_and_delete_removes_data(make_broker, tmp_path):
    broker = make_broker()
    await create(broker, "keep")
    await create(broker, "drop", 2)
    await produce(broker, "drop", 1, batch([b"x"]))
    response = await call(broker, ApiKey.DELETE_TOPICS, {"topics": ["drop", "nope"],
                                                          "timeout_ms": 1000})
    assert [t["error_code"] for t in response["topics"]] == [0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
    assert not (tmp_path / "data" / "drop-1").exists()
    broker.close()
    reopened = make_broker()
    assert sorted(reopened.topics.topics) == ["keep"]
    assert (await create(reopened, "drop"))["error_code"] == 0
    assert (await list_offset(reopened, "drop", 0, -1))["offset"] == 0


async def test_describe_configs_reports_sources(make_broker):
    broker = make_broker(log={"retention.ms": 1000})
    await create(broker, "t", configs={"segment.bytes": "4096"})
    body = {"resources": [{"type": "topic", "name": "t"}, {"type": "broker", "name": "0"},
                          {"type": "topic", "name": "nope"}]}
    topic, broker_resource, missing = (await call(broker, ApiKey.DESCRIBE_CONFIGS, body))["resources"]
    configs = {c["name"]: (c["value"], c["source"]) for c in topic["configs"]}
    assert configs["segment.bytes"] == ("4096", "topic")
    assert configs["retention.ms"] == ("1000", "broker")
    assert configs["index.interval.bytes"] == ("4096", "default")
    assert {c["name"] for c in broker_resource["configs"]} >= {"retention.ms", "num.partitions"}
    assert missing["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


async def test_alter_configs_is_incremental_persisted_and_applied_live(make_broker):
    broker = make_broker()
    await create(broker, "t", configs={"segment.bytes": "4096", "retention.ms": "5000"})

    async def alter(configs, validate_only=False, name="t"):
        body = {"resources": [{"type": "topic", "name": name, "configs": configs}],
                "validate_only": validate_only}
        return (await call(broker, ApiKey.ALTER_CONFIGS, body))["resources"][0]

    assert (await alter({"retention.ms": None, "flush.messages": "1"}))["error_code"] == 0
    plog = broker.topics.get_log("t", 0)
    assert plog.config.flush_messages == 1 and plog.config.retention_ms == 7 * 86_400_000
    assert plog.config.segment_bytes == 4096  # not named: unchanged
    bad = await alter({"segment.bytes": "-1"})
    assert bad["error_code"] == ErrorCode.INVALID_CONFIG and bad["error_message"]
    assert (await alter({"segment.bytes": "8192"}, validate_only=True))["error_code"] == 0
    assert plog.config.segment_bytes == 4096
    assert (await alter({}, name="nope"))["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    broker.close()
    reopened = make_broker()
    assert reopened.topics.topics["t"].configs == {"segment.bytes": "4096", "flush.messages": "1"}
    assert reopened.topics.get_log("t", 0).config.flush_messages == 1


# ------------------------------------------------------------------------------- produce


async def test_produce_assigns_offsets_and_one_lat_per_request(broker):
    await create(broker, "t")
    first = await produce(broker, "t", 0, batch([b"a", b"b"]))
    assert (first["error_code"], first["base_offset"], first["log_start_offset"]) == (0, 0, 0)
    second = await produce(broker, "t", 0, batch([b"c"]) + batch([b"d", b"e"]))
    assert second["base_offset"] == 2 and second["log_append_time"] >= first["log_append_time"]
    records = (await fetch(broker, "t", 0, 0))["records"]
    assert split_values(records) == [(0, b"a"), (1, b"b"), (2, b"c"), (3, b"d"), (4, b"e")]
    from tslog.protocol.records import iter_records, split_batches
    times = {r.log_append_time for piece in split_batches(records)[1:]
             for r in iter_records(bytes(piece))}
    assert times == {second["log_append_time"]}


def corrupt(data: bytes) -> bytes:
    data = bytearray(data)
    data[-1] ^= 0xFF
    return bytes(data)


@pytest.mark.parametrize("records,code", [
    (batch([b"ok"]) + corrupt(batch([b"bad"])), ErrorCode.CORRUPT_MESSAGE),
    (batch([b"ok"]) + b"\x00" * 30, ErrorCode.CORRUPT_MESSAGE),
    (b"", ErrorCode.CORRUPT_MESSAGE),
    (batch([b"ok"]) + batch([b"future"], create_time=2**62), ErrorCode.INVALID_TIMESTAMP),
    (batch([b"ok"]) + batch([b"x" * 2_000_000]), ErrorCode.MESSAGE_TOO_LARGE),
])
async def test_a_bad_batch_fails_its_partition_whole(broker, records, code):
    await create(broker, "t")
    result = await produce(broker, "t", 0, records)
    assert result["error_code"] == code and result["base_offset"] == -1
    assert broker.topics.get_log("t", 0).log_end_offset == 0


@pytest.mark.parametrize("make,code", [
    (lambda **ids: build_batch([b"x" * 2_000_000], **ids), ErrorCode.MESSAGE_TOO_LARGE),
    (lambda **ids: build_batch([b"future"], create_times=2**62, **ids),
     ErrorCode.INVALID_TIMESTAMP),
    (lambda **ids: corrupt(build_batch([b"bad"], **ids)), ErrorCode.CORRUPT_MESSAGE),
], ids=["too large", "create time", "corrupt"])
async def test_an_idempotent_batch_gets_every_check_a_plain_one_gets(broker, make, code):
    await create(broker, "t")
    producer = await call(broker, ApiKey.INIT_PRODUCER_ID, {})
    records = make(producer_id=producer["producer_id"], producer_epoch=0, base_sequence=0)
    result = await produce(broker, "t", 0, records)
    assert result["error_code"] == code and result["base_offset"] == -1
    assert broker.topics.get_log("t", 0).log_end_offset == 0


async def test_other_partitions_are_served_when_one_fails(broker):
    await create(broker, "t", 2)
    body = {"acks": 1, "timeout_ms": 1000, "topics": [
        {"topic": "t", "partitions": [{"partition": 0, "records": corrupt(batch([b"x"]))},
                                      {"partition": 1, "records": batch([b"y"])},
                                      {"partition": 7, "records": batch([b"z"])}]},
        {"topic": "nope", "partitions": [{"partition": 0, "records": batch([b"z"])}]}]}
    response = await call(broker, ApiKey.PRODUCE, body)
    codes = [p["error_code"] for t in response["topics"] for p in t["partitions"]]
    assert codes == [ErrorCode.CORRUPT_MESSAGE, 0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                     ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
    assert broker.topics.get_log("t", 1).log_end_offset == 1


async def test_acks_zero_gets_no_response_but_is_written(broker):
    await create(broker, "t")
    assert broker.dispatch[ApiKey.PRODUCE](produce_body("t", 0, batch([b"a"]), acks=0)) is None
    assert broker.topics.get_log("t", 0).log_end_offset == 1


async def test_acks_all_answers_after_fsync_and_group_commits(broker):
    await create(broker, "t", 4)
    results = await asyncio.gather(*[produce(broker, "t", i % 4, batch([b"v"]), acks=-1)
                                     for i in range(40)])
    assert all(r["error_code"] == 0 for r in results)
    for partition in range(4):
        plog = broker.topics.get_log("t", partition)
        assert plog.recovery_point == plog.log_end_offset == 10
    assert 1 <= broker.committer.rounds < 40


async def test_unexpected_storage_failure_is_unknown_server_error(broker, monkeypatch):
    await create(broker, "t")
    plog = broker.topics.get_log("t", 0)
    monkeypatch.setattr(plog, "append_checked", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("x")))
    result = await produce(broker, "t", 0, batch([b"a"]))
    assert result["error_code"] == ErrorCode.UNKNOWN_SERVER_ERROR


# --------------------------------------------------------------------------------- fetch


async def test_fetch_returns_stored_bytes_and_the_high_watermark(broker):
    await create(broker, "t")
    await produce(broker, "t", 0, batch([b"a" * 100]))
    await produce(broker, "t", 0, batch([b"b" * 100]))
    whole = await fetch(broker, "t", 0, 0)
    assert whole["high_watermark"] == 2 and split_values(whole["records"])[1] == (1, b"b" * 100)
    one = await fetch(broker, "t", 0, 0, max_bytes=10)  # smaller than a batch: still one batch
    assert [o for o, _ in split_values(one["records"])] == [0]
    at_end = await fetch(broker, "t", 0, 2)
    assert at_end["error_code"] == 0 and at_end["records"] == b""
    beyond = await fetch(broker, "t", 0, 3)
    assert beyond["error_code"] == ErrorCode.OFFSET_OUT_OF_RANGE
    missing = await fetch(broker, "nope", 0, 0)
    assert missing["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


async def test_long_poll_is_woken_by_an_append(broker):
    await create(broker, "t")
    waiting = asyncio.ensure_future(fetch(broker, "t", 0, 0, max_wait_ms=10_000, min_bytes=1))
    await asyncio.sleep(0.05)
    assert not waiting.done()
    await produce(broker, "t", 0, batch([b"wake"]))
    result = await asyncio.wait_for(waiting, 2)
    assert split_values(result["records"]) == [(0, b"wake")]


async def test_long_poll_answers_empty_after_max_wait(broker):
    await create(broker, "t")
    loop = asyncio.get_running_loop()
    started = loop.time()
    result = await fetch(broker, "t", 0, 0, max_wait_ms=100, min_bytes=1)
    assert result["records"] == b"" and 0.09 <= loop.time() - started < 2


# -------------------------------------------------------------------------- list offsets


async def test_list_offsets_by_time_and_special_timestamps(broker):
    await create(broker, "t")
    a = await produce(broker, "t", 0, batch([b"a"], create_time=broker.clock.now_ms() - 5000))
    b = await produce(broker, "t", 0, batch([b"b"], create_time=broker.clock.now_ms() - 9000))
    latest = await list_offset(broker, "t", 0, -1)
    assert (latest["offset"], latest["timestamp"]) == (2, -1)
    assert (await list_offset(broker, "t", 0, -2))["offset"] == 0
    assert (await list_offset(broker, "t", 0, -3))["offset"] in (0, 1)
    by_time = await list_offset(broker, "t", 0, a["log_append_time"])
    assert by_time["offset"] == 0 and by_time["timestamp"] == a["log_append_time"]
    after = await list_offset(broker, "t", 0, b["log_append_time"] + 10_000)
    assert (after["offset"], after["timestamp"]) == (-1, -1)
    by_create = await list_offset(broker, "t", 0, broker.clock.now_ms() - 7000, "create")
    assert by_create["offset"] == 0
    assert (await list_offset(broker, "t", 0, -7))["error_code"] == ErrorCode.INVALID_REQUEST
    assert (await list_offset(broker, "x", 0, -1))["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


# ------------------------------------------------------------------------- group offsets


async def test_committed_offsets_are_durable_across_reopen(make_broker):
    broker = make_broker()
    await create(broker, "t", 2)
    body = {"group_id": "g", "topics": [{"topic": "t", "partitions": [
        {"partition": 0, "offset": 5, "metadata": "m"},
        {"partition": 9, "offset": 1, "metadata": ""}]}]}
    codes = [p["error_code"] for p in
             (await call(broker, ApiKey.OFFSET_COMMIT, body))["topics"][0]["partitions"]]
    assert codes == [0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
    broker.close()
    reopened = make_broker()
    fetched = await call(reopened, ApiKey.OFFSET_FETCH, {"group_id": "g", "topics": [
        {"topic": "t", "partitions": [0, 1]}]})
    assert [(p["offset"], p["metadata"]) for p in fetched["topics"][0]["partitions"]] == [
        (5, "m"), (-1, "")]
    everything = await call(reopened, ApiKey.OFFSET_FETCH, {"group_id": "g", "topics": None})
    assert everything["topics"] == [{"topic": "t", "partitions": [
        {"partition": 0, "offset": 5, "metadata": "m", "error_code": 0}]}]


async def test_deleting_a_topic_drops_its_committed_offsets_from_every_group(make_broker):
    """As in Kafka: re-created under the same name, the topic hands no group the offsets of
    its predecessor (a consumer past the new log end would reset and could skip records)."""
    broker = make_broker()
    await create(broker, "t", 2)
    await create(broker, "keep")
    for group in ("a", "b"):
        body = {"group_id": group, "topics": [
            {"topic": "t", "partitions": [{"partition": 0, "offset": 40, "metadata": ""},
                                          {"partition": 1, "offset": 41, "metadata": ""}]},
            {"topic": "keep", "partitions": [{"partition": 0, "offset": 7, "metadata": "k"}]}]}
        await call(broker, ApiKey.OFFSET_COMMIT, body)
    deleted = await call(broker, ApiKey.DELETE_TOPICS, {"topics": ["t"], "timeout_ms": 1000})
    assert deleted["topics"][0]["error_code"] == 0
    await create(broker, "t", 2)
    broker.close()
    reopened = make_broker()  # and durably so
    for group in ("a", "b"):
        everything = await call(reopened, ApiKey.OFFSET_FETCH, {"group_id": group,
                                                                "topics": None})
        assert everything["topics"] == [{"topic": "keep", "partitions": [
            {"partition": 0, "offset": 7, "metadata": "k", "error_code": 0}]}]
        asked = await call(reopened, ApiKey.OFFSET_FETCH, {"group_id": group, "topics": [
            {"topic": "t", "partitions": [0, 1]}]})
        assert [p["offset"] for p in asked["topics"][0]["partitions"]] == [-1, -1]


async def test_offset_commit_refuses_bad_group_and_large_metadata(broker):
    await create(broker, "t")
    entry = {"partition": 0, "offset": 1, "metadata": "x" * 5000}
    body = {"group_id": "g", "topics": [{"topic": "t", "partitions": [entry]}]}
    result = (await call(broker, ApiKey.OFFSET_COMMIT, body))["topics"][0]["partitions"][0]
    assert result["error_code"] == ErrorCode.OFFSET_METADATA_TOO_LARGE
    body["group_id"] = ""
    result = (await call(broker, ApiKey.OFFSET_COMMIT, body))["topics"][0]["partitions"][0]
    assert result["error_code"] == ErrorCode.INVALID_GROUP_ID


# ------------------------------------------------------------------------ periodic work


async def test_retention_pass_expires_old_data_by_log_append_time(broker):
    from tslog.broker.server.listener import _checkpoints, _retention

    await create(broker, "t", configs={"retention.ms": "60000"})
    for value in (b"a", b"b", b"c"):
        await produce(broker, "t", 0, batch([value]))
    await _retention(broker)
    assert (await list_offset(broker, "t", 0, -2))["offset"] == 0  # nothing old yet
    broker.clock.offset_ms += 120_000  # two minutes later
    await _retention(broker)
    await _checkpoints(broker)
    assert (await list_offset(broker, "t", 0, -2))["offset"] == 3
    assert (await fetch(broker, "t", 0, 0))["error_code"] == ErrorCode.OFFSET_OUT_OF_RANGE
    assert (await produce(broker, "t", 0, batch([b"d"])))["base_offset"] == 3


async def test_concurrent_commits_of_one_group_keep_arrival_order(broker):
    await create(broker, "t")

    def commit(offset):
        return call(broker, ApiKey.OFFSET_COMMIT, {"group_id": "g", "topics": [
            {"topic": "t", "partitions": [{"partition": 0, "offset": offset, "metadata": ""}]}]})

    await asyncio.gather(*[commit(offset) for offset in range(1, 30)])
    fetched = await call(broker, ApiKey.OFFSET_FETCH, {"group_id": "g", "topics": None})
    assert fetched["topics"][0]["partitions"][0]["offset"] == 29


async def test_a_deletion_cut_short_by_a_crash_is_finished_at_the_next_start(make_broker, tmp_path):
    broker = make_broker()
    for name in ("doomed", "kept"):
        assert (await create(broker, name, partitions=2))["error_code"] == 0
        assert (await produce(broker, name, 0, batch([b"a", b"b"])))["error_code"] == 0
    # The topic's record went, the loop's half of a cluster deletion ran (logs closed,
    # directories renamed aside), then the process died before its thread unlinked the files.
    broker.topics.forget_topic_durably("doomed")
    removed, retired = broker.topics.drop_local_logs("doomed")
    assert len(removed) == 2 and all(path.exists() for path in retired)
    broker.close()
    reopened = make_broker()
    assert not any(path.exists() for path in retired)
    data = tmp_path / "data"
    assert sorted(p.name for p in data.iterdir() if p.name.startswith(("doomed", "kept"))) == [
        "kept-0", "kept-1"]
    assert sorted(reopened.topics.topics) == ["kept"]
    assert reopened.topics.get_log("kept", 0).log_end_offset == 2  # its records stayed
