"""Which responses a client connection leaves in its receive buffer (``record_views``): a
Fetch answer's records, and nothing else. The views walk costs Python work per msgpack
item; a 1,000-partition chart's OffsetsAtTimes answer (122,000 integers, over the views
threshold) must be decoded by msgpack's C code, while a Fetch answer's records stay views."""

from __future__ import annotations

from tests.helpers.python_calls import calls_by_name
from tslog.protocol.connection import NEED_DATA, Connection, Role
from tslog.protocol.messages import ApiKey, encode_response
from tslog.protocol.records import build_batch


def answered(api_key: ApiKey, request: dict, response: dict):
    client = Connection(Role.CLIENT, client_id="c", record_views=True, views_from=1024)
    client.send_request(api_key, request)
    client.receive_data(encode_response(1, response))
    calls, event = calls_by_name(client.next_event)
    assert event is not NEED_DATA
    return calls, event.body


def test_a_large_offsets_at_times_answer_is_decoded_in_c():
    times = list(range(1_000, 1_061))
    request = {"timestamp_type": "append", "topics": [{"topic": "t", "partitions": [
        {"partition": p, "timestamps": times} for p in range(1_000)]}]}
    response = {"topics": [{"topic": "t", "partitions": [
        {"partition": p, "error_code": 0, "offsets": times, "timestamps": times}
        for p in range(1_000)]}]}
    calls, body = answered(ApiKey.OFFSETS_AT_TIMES, request, response)
    assert body == response
    assert calls["python"] < 100


def test_a_large_fetch_answer_keeps_its_records_in_the_buffer():
    records = build_batch([b"x" * 1_000] * 1_000)  # past the scratch buffer: a frame of its own
    request = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20,
               "topics": [{"topic": "t", "partitions": [
                   {"partition": 0, "fetch_offset": 0, "max_bytes": 1 << 20}]}]}
    response = {"topics": [{"topic": "t", "partitions": [
        {"partition": 0, "error_code": 0, "high_watermark": 100, "log_start_offset": 0,
         "records": records}]}]}
    _, body = answered(ApiKey.FETCH, request, response)
    viewed = body["topics"][0]["partitions"][0]["records"]
    assert type(viewed) is memoryview and bytes(viewed) == records
