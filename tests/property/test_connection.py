"""Hypothesis: the sans-I/O connection sees the same events however the stream is cut.

A stream of request frames (valid ones of several APIs, ones the broker must refuse with a
typed error, Produce requests small and larger than the receive scratch) is fed in one piece,
in arbitrary ``receive_data`` chunks, and through ``get_buffer``/``buffer_updated`` with
arbitrary ``recv`` sizes; the events must be identical. The same holds for a client reading
responses. Answers given in any order leave in request order.
"""

from __future__ import annotations

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tslog.protocol.connection import (
    NEED_DATA,
    Connection,
    ConnectionClosed,
    Refused,
    Request,
    Response,
    Role,
)
from tslog.protocol.errors import RemoteProtocolError
from tslog.protocol.frames import SCRATCH_BYTES, FrameReceiver, FrameTooLargeError, encode_frame
from tslog.protocol.messages import ApiKey, RequestHeader, encode_request, encode_response

records = st.one_of(st.binary(max_size=300),
                    st.integers(SCRATCH_BYTES - 64, 3 * SCRATCH_BYTES).map(
                        lambda n: bytes(range(256)) * (n // 256)))


@st.composite
def request_frames(draw):
    kind = draw(st.sampled_from(["produce", "produce0", "metadata", "versions", "unknown",
                                 "bad_version", "bad_schema"]))
    correlation_id = draw(st.integers(0, 2**31 - 1))
    header = RequestHeader(ApiKey.PRODUCE, 0, correlation_id, "c")
    if kind in ("produce", "produce0"):
        body = {"acks": 0 if kind == "produce0" else 1, "timeout_ms": 100, "topics": [
            {"topic": "t", "partitions": [{"partition": 0, "records": draw(records)}]}]}
        return encode_request(header, body)
    if kind == "metadata":
        return encode_request(header._replace(api_key=ApiKey.METADATA), {"topics": ["t"]})
    if kind == "versions":
        return encode_request(header._replace(api_key=ApiKey.API_VERSIONS), {})
    envelope = {"unknown": [999, 0, correlation_id, "c", {}],
                "bad_version": [int(ApiKey.METADATA), 99, correlation_id, "c", {}],
                "bad_schema": [int(ApiKey.METADATA), 0, correlation_id, "c", {"topics": 5}]}
    return encode_frame(msgpack.packb(envelope[kind], use_bin_type=True))


def plain(value):
    if isinstance(value, memoryview):
        return bytes(value)
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def summary(event):
    if isinstance(event, Request):
        return ("request", event.sequence, tuple(event.header), plain(event.body))
    if isinstance(event, Refused):
        return ("refused", event.sequence, type(event.error).__name__,
                event.error.correlation_id)
    if isinstance(event, Response):
        return ("response", event.correlation_id, event.api_key, plain(event.body))
    return event


def drain(connection) -> list:
    events = []
    while (event := connection.next_event()) is not NEED_DATA:
        events.append(summary(event))
        if isinstance(event, ConnectionClosed):
            break
    return events


def feed_whole(connection, stream: bytes) -> list:
    connection.receive_data(stream)
    connection.receive_data(b"")
    return drain(connection)


def feed_chunks(connection, stream: bytes, cuts: list[int]) -> list:
    events = []
    position = 0
    for cut in sorted(cuts) + [len(stream)]:
        if cut > position:  # an empty chunk would mean "closed"
            connection.receive_data(stream[position:cut])
            position = cut
        if position < len(stream):
            events += drain(connection)
    connection.receive_data(b"")
    return events + drain(connection)


def feed_recv_into(connection, stream: bytes, sizes: list[int]) -> list:
    """What a socket does: write at most ``size`` bytes into ``get_buffer()`` per call."""
    events = []
    position = 0
    turn = 0
    while position < len(stream):
        buffer = connection.get_buffer()
        count = min(len(buffer), sizes[turn % len(sizes)], len(stream) - position)
        turn += 1
        buffer[:count] = stream[position:position + count]
        connection.buffer_updated(count)
        position += count
        events += drain(connection)
    connection.receive_data(b"")
    return events + drain(connection)


@given(st.lists(request_frames(), max_size=8), st.data())
def test_a_server_sees_the_same_requests_however_the_stream_is_cut(frames, data):
    stream = b"".join(frames)
    whole = feed_whole(Connection(Role.SERVER, record_views=True, views_from=0), stream)
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=12))
    sizes = data.draw(st.lists(st.integers(1, 3 * SCRATCH_BYTES), min_size=1, max_size=6))
    assert feed_chunks(Connection(Role.SERVER, record_views=True, views_from=0), stream, cuts) == whole
    assert feed_recv_into(Connection(Role.SERVER), stream, sizes) == whole
    assert whole[-1] == ConnectionClosed(0)
    assert len(whole) == len(frames) + 1


@given(st.lists(st.tuples(st.sampled_from([ApiKey.FETCH, ApiKey.PRODUCE]), records),
                max_size=6), st.data())
def test_a_client_reads_the_same_responses_however_the_stream_is_cut(requests, data):
    def client_with_requests():
        client = Connection(Role.CLIENT, client_id="c", record_views=True, views_from=0)
        for api_key, _ in requests:
            body = ({"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1,
                     "topics": []} if api_key == ApiKey.FETCH else
                    {"acks": 1, "timeout_ms": 1, "topics": []})
            client.send_request(api_key, body)
        return client

    def partition(api_key, blob):
        if api_key == ApiKey.FETCH:
            return {"partition": 0, "error_code": 0, "high_watermark": 1,
                    "log_start_offset": 0, "records": blob}
        return {"partition": 0, "error_code": 0, "base_offset": len(blob),
                "log_append_time": 1, "log_start_offset": 0}

    bodies = [{"topics": [{"topic": "t", "partitions": [partition(api_key, blob)]}]}
              for api_key, blob in requests]
    stream = b"".join(encode_response(i + 1, body) for i, body in enumerate(bodies))
    whole = feed_whole(client_with_requests(), stream)
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=12))
    sizes = data.draw(st.lists(st.integers(1, 4096), min_size=1, max_size=6))
    assert feed_chunks(client_with_requests(), stream, cuts) == whole
    assert feed_recv_into(client_with_requests(), stream, sizes) == whole
    assert [e[3] for e in whole[:-1]] == bodies


@given(st.permutations(range(6)))
def test_answers_leave_in_request_order_whatever_order_they_are_given_in(order):
    server = Connection(Role.SERVER)
    stream = b"".join(encode_request(RequestHeader(ApiKey.METADATA, 0, 100 + i, "c"),
                                     {"topics": None}) for i in range(6))
    server.receive_data(stream)
    sequences = [server.next_event().sequence for _ in range(6)]
    def frame(i):
        return encode_response(100 + i, {"brokers": [], "topics": [], "n": i})

    sent = []
    answered = set()
    for index in order:
        server.answer(sequences[index], {"brokers": [], "topics": [], "n": index})
        answered.add(index)
        sent += server.data_to_send()
        released = next(i for i in range(7) if i not in answered)  # the head still unanswered
        assert b"".join(sent) == b"".join(frame(i) for i in range(released))
        assert server.held_bytes == sum(len(frame(i)) for i in answered if i >= released)
    assert b"".join(sent) == b"".join(frame(i) for i in range(6))
    assert server.held_bytes == 0 and server.unanswered == 0


def test_an_oversized_frame_is_refused_at_its_prefix_before_any_allocation():
    receiver = FrameReceiver(max_frame_bytes=1000)
    ok = encode_frame(b"\x01" * 10)
    receiver.receive_data(ok + (10**9).to_bytes(4, "big"))
    assert receiver.next_frame() == b"\x01" * 10  # a frame before the bad prefix still counts
    with pytest.raises(FrameTooLargeError):
        receiver.next_frame()
    # Later bytes are dropped, not parsed and not raised (asyncio treats a raising
    # get_buffer as a fatal transport error): the stream stays broken.
    later = encode_frame(b"\x02" * 10)
    buffer = receiver.get_buffer(-1)
    buffer[:len(later)] = later
    receiver.buffer_updated(len(later))
    assert receiver.buffered_bytes == 0
    with pytest.raises(FrameTooLargeError):
        receiver.next_frame()


def test_a_large_frame_is_received_in_a_buffer_of_its_own_size():
    sizes = []

    def allocate(size):
        sizes.append(size)
        return bytearray(size)

    receiver = FrameReceiver(allocate=allocate)
    body = bytes(range(256)) * 1024  # 256 KiB: four times the scratch
    stream = encode_frame(body)
    receiver.buffer_updated(0)
    position = 0
    while position < len(stream):
        buffer = receiver.get_buffer()
        count = min(len(buffer), len(stream) - position)
        buffer[:count] = stream[position:position + count]
        receiver.buffer_updated(count)
        position += count
        if sizes:  # after the first scratch-full, the socket writes into the frame itself
            assert len(buffer) <= len(body)
    frame = receiver.next_frame()
    assert sizes == [len(body)] and isinstance(frame, bytearray) and frame == body


def test_a_response_to_no_request_or_out_of_step_breaks_the_connection():
    client = Connection(Role.CLIENT)
    client.receive_data(encode_response(1, {"brokers": [], "topics": []}))
    with pytest.raises(RemoteProtocolError, match="no request outstanding"):
        client.next_event()
    client = Connection(Role.CLIENT)
    client.send_request(ApiKey.METADATA, {"topics": None})
    client.receive_data(encode_response(7, {"brokers": [], "topics": []}))
    with pytest.raises(RemoteProtocolError, match="does not answer request 1"):
        client.next_event()


def test_a_peer_closing_inside_a_frame_is_reported_with_the_bytes_it_left():
    server = Connection(Role.SERVER)
    frame = encode_request(RequestHeader(ApiKey.METADATA, 0, 1, "c"), {"topics": None})
    server.receive_data(frame + frame[:5])
    server.receive_data(b"")
    assert isinstance(server.next_event(), Request)
    assert server.next_event() == ConnectionClosed(5)
