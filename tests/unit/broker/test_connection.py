"""BrokerConnection fed through a fake transport: ordering, limits and bad frames, no sockets."""

from __future__ import annotations

import asyncio
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers.wire import batch
from tslog.broker.server.connection import BrokerConnection
from tslog.broker.server.native_front import NativeFront
from tslog.broker.server.connection_registry import (
    MAX_PENDING_REFUSALS,
    MAX_PENDING_REFUSALS_PER_ADDRESS,
    ConnectionRegistry,
)
from tslog.protocol.errors import ErrorCode
from tslog.protocol.frames import FrameReceiver
from tslog.protocol.messages import ApiKey, RequestHeader, encode_request, split_response

pytestmark = pytest.mark.timeout(30)


class FakeTransport(asyncio.Transport):
    def __init__(self, host: str = "127.0.0.1") -> None:
        super().__init__()
        self.host = host
        self.written = bytearray()
        self.closed = False
        self.reading = True
        self.aborted = False
        self.unsent = 0  # what the "socket" has not taken: set by tests of the unsent caps
        self.writes = 0  # calls that handed it bytes: a socket's sends

    def get_extra_info(self, name, default=None):
        return (self.host, 5555) if name == "peername" else default

    def writelines(self, frames) -> None:
        self.writes += 1
        for frame in frames:
            self.written += frame

    def get_write_buffer_size(self) -> int:
        return self.unsent

    def set_write_buffer_limits(self, high=None, low=None) -> None:
        pass

    def write(self, data) -> None:
        self.writes += 1
        self.written += data

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.closed = self.aborted = True

    def responses(self) -> list[tuple[int, dict]]:
        return [split_response(frame) for frame in FrameReceiver(1 << 30).feed(self.written)]


def request(api_key, body, correlation_id):
    return encode_request(RequestHeader(api_key, 0, correlation_id, "t"), body)


def fetch_request(correlation_id, max_wait_ms):
    body = {"replica_id": -1, "max_wait_ms": max_wait_ms, "min_bytes": 1, "max_bytes": 1000,
            "topics": [{"topic": "t", "partitions": [
                {"partition": 0, "fetch_offset": 0, "max_bytes": 1000}]}]}
    return request(ApiKey.FETCH, body, correlation_id)


def new_connection(broker, registry):
    """A connection as the listener makes it: the broker's dispatch table, not the broker."""
    return BrokerConnection(NativeFront(broker.dispatch), broker.config, broker.idle_poller,
                            registry)


def connect(broker, **limits):
    connection = new_connection(broker, ConnectionRegistry(limits.get("max_connections", 10)))
    transport = FakeTransport()
    connection.connection_made(transport)
    return connection, transport


async def test_responses_follow_request_order_when_handlers_finish_out_of_order(broker):
    broker.topics.create_topic("t", 1, 1, {})
    connection, transport = connect(broker)
    connection.data_received(fetch_request(1, 200) + request(ApiKey.API_VERSIONS, {}, 2))
    assert transport.responses() == []  # ApiVersions is done but waits behind the fetch
    await asyncio.sleep(0.3)
    assert [cid for cid, _ in transport.responses()] == [1, 2]


def _durable_produce(cid: int, timeout_ms: int = 10_000) -> bytes:
    body = {"acks": -1, "timeout_ms": timeout_ms, "topics": [
        {"topic": "t", "partitions": [{"partition": 0, "records": batch([b"x"])}]}]}
    return request(ApiKey.PRODUCE, body, cid)


async def _answers(transport, count: int) -> list:
    for _ in range(500):
        if len(transport.responses()) >= count:
            break
        await asyncio.sleep(0.01)
    return transport.responses()


async def test_the_answers_one_group_commit_made_durable_go_out_in_one_write(broker):
    """acks=all on a single node: pipelined produces wait for the same fsync round, and
    their answers leave together, not each in a send of its own (counted, not timed)."""
    broker.topics.create_topic("t", 1, 1, {})
    connection, transport = connect(broker)
    rounds = broker.committer.rounds
    connection.data_received(b"".join(_durable_produce(cid) for cid in range(8)))
    answers = await _answers(transport, 8)
    assert [cid for cid, _ in answers] == list(range(8))
    assert all(part["error_code"] == 0 for _, answer in answers
               for topic in answer["topics"] for part in topic["partitions"])
    assert transport.writes <= broker.committer.rounds - rounds < 8


async def test_a_rounds_answers_are_written_in_the_call_that_settles_it(broker, monkeypatch):
    """The group commit hands each round to the loop in one ``call_soon_threadsafe``; the
    answers it made due go out in that call, not a loop turn later behind whatever the
    loop reads meanwhile (``pending.together``)."""
    broker.topics.create_topic("t", 1, 1, {})
    connection, transport = connect(broker)
    loop = asyncio.get_running_loop()
    written_by_handoffs = []
    hand_off = loop.call_soon_threadsafe

    def hand_off_and_count(callback, *args, **kwargs):
        def run_and_count():
            before = len(transport.responses())
            callback(*args)
            written_by_handoffs.append(len(transport.responses()) - before)
        return hand_off(run_and_count, **kwargs)

    monkeypatch.setattr(loop, "call_soon_threadsafe", hand_off_and_count)
    connection.data_received(b"".join(_durable_produce(cid) for cid in range(8)))
    answers = await _answers(transport, 8)
    assert [cid for cid, _ in answers] == list(range(8))
    assert sum(written_by_handoffs) == 8


async def test_an_acks_all_produce_on_a_single_node_runs_no_task(broker):
    """The answer is built in the call that settles the group commit's round
    (``data/pending.py``): a task per durable produce cost more than the wait itself."""
    broker.topics.create_topic("t", 1, 1, {})
    connection, transport = connect(broker)
    loop = asyncio.get_running_loop()
    tasks = []

    def counting_factory(loop, coro, **kwargs):
        tasks.append(coro)
        return asyncio.Task(coro, loop=loop, **kwargs)

    loop.set_task_factory(counting_factory)
    try:
        connection.data_received(b"".join(_durable_produce(cid) for cid in range(20)))
        answers = await _answers(transport, 20)
    finally:
        loop.set_task_factory(None)
    assert [cid for cid, _ in answers] == list(range(20))
    assert [part["base_offset"] for _, answer in answers for part in
            answer["topics"][0]["partitions"]] == list(range(20))
    assert tasks == []


async def test_an_acks_all_produce_whose_fsync_hangs_times_out_and_later_ones_go_on(
        broker, monkeypatch):
    """Its own timeout answers REQUEST_TIMED_OUT (the batch is in the log, not known
    durable); the round, once the disk comes back, still answers the requests after it."""
    broker.topics.create_topic("t", 1, 1, {})
    log = broker.topics.get_log("t", 0)
    stuck, real_flush = threading.Event(), log.flush

    def hanging_flush():
        stuck.wait(10)
        return real_flush()

    monkeypatch.setattr(log, "flush", hanging_flush)
    connection, transport = connect(broker)
    connection.data_received(_durable_produce(1, timeout_ms=200))
    answers = await _answers(transport, 1)
    assert [cid for cid, _ in answers] == [1]
    assert answers[0][1]["topics"][0]["partitions"][0]["error_code"] == \
        ErrorCode.REQUEST_TIMED_OUT
    connection.data_received(_durable_produce(2))
    stuck.set()
    answers = await _answers(transport, 2)
    assert answers[1][0] == 2
    assert answers[1][1]["topics"][0]["partitions"][0]["error_code"] == 0
    assert log.recovery_point == 2


async def test_reading_pauses_at_the_in_flight_cap_and_resumes(make_broker):
    broker = make_broker(max_in_flight_requests=2)
    broker.topics.create_topic("t", 1, 1, {})
    connection, transport = connect(broker)
    connection.data_received(fetch_request(1, 5000) + fetch_request(2, 5000))
    assert not transport.reading
    broker.topics.get_log("t", 0).append(batch([b"x"]))
    broker.notifier.notify(broker.topics.get_log("t", 0))
    await asyncio.sleep(0.05)
    assert [cid for cid, _ in transport.responses()] == [1, 2] and transport.reading


async def test_an_oversized_frame_closes_before_its_body_arrives(make_broker):
    broker = make_broker(max_frame_bytes=1024)
    connection, transport = connect(broker)
    connection.data_received((4096).to_bytes(4, "big") + b"x" * 10)
    assert transport.closed and transport.written == b""


async def test_frames_split_byte_by_byte_still_parse(broker):
    connection, transport = connect(broker)
    data = request(ApiKey.API_VERSIONS, {}, 7) * 2
    for i in range(len(data)):
        connection.data_received(data[i:i + 1])
    assert [cid for cid, _ in transport.responses()] == [7, 7]


async def test_a_connection_over_the_limit_is_told_why_then_closed(broker):
    registry = ConnectionRegistry(1)
    first, second = new_connection(broker, registry), new_connection(broker, registry)
    first.connection_made(FakeTransport())
    transport = FakeTransport()
    second.connection_made(transport)
    assert registry.refused == 1 and not transport.closed  # waiting for its first request
    second.data_received(request(ApiKey.METADATA, {"topics": None}, 9))
    [(correlation_id, body)] = transport.responses()
    assert correlation_id == 9 and body["error_code"] == ErrorCode.TOO_MANY_CONNECTIONS
    assert "max_connections = 1" in body["error_message"]
    assert transport.closed and len(registry.connections) == 1
    second.connection_lost(None)
    assert registry.pending_refusals == 0 and registry.unsent_bytes == 0


async def test_in_a_flood_of_refused_connections_the_excess_is_closed_at_once(broker):
    registry = ConnectionRegistry(1)
    new_connection(broker, registry).connection_made(FakeTransport())
    # From many addresses, a few each: the broker-wide bound.
    waiting = [FakeTransport(f"10.0.{i // 8}.{i % 8}") for i in range(MAX_PENDING_REFUSALS + 5)]
    for transport in waiting:
        new_connection(broker, registry).connection_made(transport)
    assert registry.pending_refusals == MAX_PENDING_REFUSALS  # each holds a socket <= 1 s
    assert [t.aborted for t in waiting[-6:]] == [False] + [True] * 5


async def test_one_flooding_address_cannot_use_up_the_answers_owed_to_others(broker):
    registry = ConnectionRegistry(1)
    new_connection(broker, registry).connection_made(FakeTransport())
    flood = [FakeTransport("127.0.0.3") for _ in range(MAX_PENDING_REFUSALS)]
    for transport in flood:
        new_connection(broker, registry).connection_made(transport)
    assert registry.pending_refusals == MAX_PENDING_REFUSALS_PER_ADDRESS
    assert sum(t.aborted for t in flood) == MAX_PENDING_REFUSALS - MAX_PENDING_REFUSALS_PER_ADDRESS
    other = FakeTransport("127.0.0.2")
    new_connection(broker, registry).connection_made(other)
    assert not other.aborted  # waits for its request, to be told why


async def test_a_refused_connection_that_says_nothing_is_closed_soon(broker, monkeypatch):
    monkeypatch.setattr("tslog.broker.server.connection.REFUSAL_WAIT_S", 0.05)
    registry = ConnectionRegistry(10, max_per_address=1)
    new_connection(broker, registry).connection_made(FakeTransport())
    transport = FakeTransport()
    new_connection(broker, registry).connection_made(transport)
    await asyncio.sleep(0.2)
    assert transport.closed and transport.responses() == []


async def test_idle_connection_is_closed(make_broker):
    broker = make_broker(connections_max_idle_ms=50)
    connection, transport = connect(broker)
    await asyncio.sleep(0.2)
    assert transport.closed


async def test_an_idle_connection_whose_client_never_reads_is_aborted(make_broker):
    """Closing would keep its unsent answers until the client reads, maybe forever."""
    broker = make_broker(connections_max_idle_ms=50)
    broker.topics.create_topic("t", 1, 1, {})
    broker.topics.get_log("t", 0).append(batch([b"v" * 1000] * 10))
    connection, transport = connect(broker)
    transport.unsent = 10_000  # the socket took none of the answer
    connection.data_received(data_fetch(1))
    await asyncio.sleep(0.2)
    assert transport.aborted
    connection.connection_lost(None)  # what a real transport calls next
    assert connection.registry.unsent_bytes == 0


async def test_shutdown_waits_for_in_flight_requests(broker):
    broker.topics.create_topic("t", 1, 1, {})
    registry = ConnectionRegistry(10)
    connection = new_connection(broker, registry)
    transport = FakeTransport()
    connection.connection_made(transport)
    connection.data_received(fetch_request(1, 100))
    connection.begin_shutdown()
    assert not transport.closed
    await asyncio.sleep(0.3)
    assert transport.closed and [cid for cid, _ in transport.responses()] == [1]



def fill_topic(broker, batches: int = 4) -> None:
    broker.topics.create_topic("t", 1, 1, {})
    for _ in range(batches):
        broker.topics.get_log("t", 0).append(batch([b"v" * 1000] * 100))


def data_fetch(correlation_id):
    body = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20,
            "topics": [{"topic": "t", "partitions": [
                {"partition": 0, "fetch_offset": 0, "max_bytes": 1 << 20}]}]}
    return request(ApiKey.FETCH, body, correlation_id)


async def test_requests_wait_while_unsent_bytes_exceed_the_connection_cap(make_broker):
    """Bytes, not requests: with the socket not draining, one Fetch's answer reaches the cap
    and the other requests of the same read wait (reading paused) until it drains."""
    broker = make_broker(max_unsent_response_bytes=64 * 1024)
    fill_topic(broker)
    connection, transport = connect(broker)
    transport.unsent = 400_000  # the socket takes nothing
    connection.data_received(b"".join(data_fetch(i) for i in range(1, 6)))
    assert [cid for cid, _ in transport.responses()] == [1] and not transport.reading
    assert connection.registry.unsent_bytes == 400_000
    transport.unsent = 0
    connection.resume_writing()  # drained: the other four are answered, in order
    assert [cid for cid, _ in transport.responses()] == [1, 2, 3, 4, 5] and transport.reading


async def test_answers_held_behind_a_long_poll_go_out_and_reading_resumes(make_broker):
    """A long poll, then Fetches whose answers wait behind it until they reach the cap. When
    the long poll answers, everything goes out, and if the socket takes it all at once (no
    pause_writing, so no resume_writing either) the requests still waiting are handled
    anyway: nothing else would ever wake the connection."""
    broker = make_broker(max_unsent_response_bytes=64 * 1024)
    fill_topic(broker)
    broker.topics.create_topic("empty", 1, 1, {})
    connection, transport = connect(broker)
    long_poll = {"replica_id": -1, "max_wait_ms": 200, "min_bytes": 1, "max_bytes": 1000,
                 "topics": [{"topic": "empty", "partitions": [
                     {"partition": 0, "fetch_offset": 0, "max_bytes": 1000}]}]}
    connection.data_received(request(ApiKey.FETCH, long_poll, 1)
                             + b"".join(data_fetch(i) for i in range(2, 8)))
    assert transport.responses() == [] and not transport.reading  # held behind the poll
    await asyncio.sleep(0.4)  # the poll times out; the socket (unsent = 0) takes everything
    assert [cid for cid, _ in transport.responses()] == list(range(1, 8))
    assert transport.reading


async def test_at_the_broker_wide_cap_only_connections_holding_nothing_read(make_broker):
    """Over the broker-wide total, a connection whose socket holds bytes waits; one whose
    socket drained is still served; the first goes on once the total drops."""
    broker = make_broker(max_unsent_response_bytes=1 << 20,
                         max_total_unsent_response_bytes=1 << 20)
    fill_topic(broker)
    registry = ConnectionRegistry(10, 1 << 20)
    hostile, normal = new_connection(broker, registry), new_connection(broker, registry)
    hostile_transport, normal_transport = FakeTransport(), FakeTransport()
    hostile.connection_made(hostile_transport)
    normal.connection_made(normal_transport)
    hostile_transport.unsent = normal_transport.unsent = 600_000  # neither socket drains
    hostile.pause_writing()  # (a real transport calls it past its high-water mark)
    hostile.data_received(data_fetch(1))
    normal.data_received(data_fetch(1))
    assert registry.unsent_bytes == 1_200_000  # over the total: each answered once
    hostile.data_received(data_fetch(2))
    assert [cid for cid, _ in hostile_transport.responses()] == [1]
    assert not hostile_transport.reading and hostile in registry.waiting
    normal_transport.unsent = 0  # its client read everything: it holds nothing
    normal.data_received(data_fetch(2))
    assert [cid for cid, _ in normal_transport.responses()] == [1, 2]
    assert registry.unsent_bytes == 600_000  # under the total: the hostile one is woken
    await asyncio.sleep(0)
    assert [cid for cid, _ in hostile_transport.responses()] == [1, 2]


@pytest.fixture(scope="module")
def shared_broker(tmp_path_factory):
    """One broker for every hypothesis example (opening one per example is most of the cost)."""
    from tslog.broker.config import BrokerConfig
    from tslog.broker.server.state import Broker

    broker = Broker.open(BrokerConfig(data_dir=str(tmp_path_factory.mktemp("fuzz")),
                                      max_frame_bytes=4096,
                                      log={"segment.index.bytes": 4096}))
    broker.topics.create_topic("topic", 1, 1, {})
    yield broker
    broker.close()


@settings(max_examples=150, deadline=None)
@given(chunks=st.lists(st.binary(max_size=64), max_size=20), valid_first=st.booleans())
def test_arbitrary_bytes_never_escape_as_exceptions(shared_broker, chunks, valid_first):
    """Whatever arrives, the connection answers with well-formed frames or closes; no error
    leaves data_received (which would tear down the transport with a traceback)."""
    import asyncio as _asyncio

    async def run():
        connection, transport = connect(shared_broker)
        if valid_first:
            connection.data_received(request(ApiKey.API_VERSIONS, {}, 1))
        for chunk in chunks:
            if transport.closed:
                break
            connection.data_received(chunk)
        for correlation_id, body in transport.responses():
            assert isinstance(body.get("error_code", 0), int)
        connection.connection_lost(None)

    _asyncio.run(run())


_scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**40, 2**40), st.text(max_size=8),
                     st.binary(max_size=16))
_values = st.recursive(_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)),
    max_leaves=8)
_keys = st.sampled_from(["topics", "topic", "partitions", "partition", "records", "acks",
                         "timeout_ms", "group_id", "fetch_offset", "max_bytes", "resources"])
_bodies = st.dictionaries(_keys, _values, max_size=4)
_envelopes = st.tuples(st.sampled_from(list(ApiKey) + [5, 99]), st.integers(-1, 2),
                       st.one_of(st.none(), st.text(max_size=4)), _bodies)


@settings(max_examples=200, deadline=None)
@given(envelopes=st.lists(_envelopes, min_size=1, max_size=6))
def test_well_framed_nonsense_gets_answers_in_order_never_tracebacks(shared_broker, envelopes):
    """Envelope-shaped requests with random bodies: answers (an error code or a real
    response) come in request order, and nothing escapes."""
    import asyncio as _asyncio

    import msgpack

    async def run():
        connection, transport = connect(shared_broker)
        frames = []
        for correlation_id, (api_key, version, client_id, body) in enumerate(envelopes):
            packed = msgpack.packb([api_key, version, correlation_id, client_id, body],
                                   use_bin_type=True)
            frames.append(len(packed).to_bytes(4, "big") + packed)
        connection.data_received(b"".join(frames))
        await _asyncio.sleep(0)
        ids = [correlation_id for correlation_id, _ in transport.responses()]
        assert ids == sorted(set(ids))  # request order, each answered at most once
        for _, body in transport.responses():
            assert "Traceback" not in str(body)
        connection.connection_lost(None)

    _asyncio.run(run())
