"""RecordBatch v2: round trips with every codec, kafka-python's DefaultRecordBatch as the
oracle both ways, conversion to tslog batches and back, and only typed errors from corrupt,
truncated or random bytes."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from tslog.protocol.batch_header import stamp
from tslog.protocol.errors import BatchFormatError
from tslog.protocol.kafka import compression, convert
from tslog.protocol.kafka import record_batch as rb
from tslog.protocol.kafka.errors import KafkaBatchError, UnsupportedCompression
from tslog.protocol.records import iter_records
from tests.unit.protocol.kafka.kafka_strategies import scaled

CODECS = compression.available()
maybe_bytes = st.none() | st.binary(max_size=30)
records = st.lists(st.tuples(
    maybe_bytes, maybe_bytes, st.integers(0, 1 << 42),
    st.lists(st.tuples(st.text(max_size=5), maybe_bytes), max_size=2)), min_size=1, max_size=20)


def test_every_codec_is_installed():
    assert CODECS == [compression.NONE, compression.GZIP, compression.SNAPPY, compression.LZ4,
                      compression.ZSTD]


@pytest.mark.parametrize("codec", CODECS)
@given(rows=records)
def test_round_trip(codec, rows):
    keys, values, times, headers = map(list, zip(*rows))
    data = rb.encode_batch(values, keys, times, headers, codec=codec, base_offset=7,
                           producer_id=3, producer_epoch=1, base_sequence=11)
    batch = rb.decode_batch(data)
    assert (batch.keys, batch.values, batch.timestamps(), batch.headers) == (keys, values, times, headers)
    assert (batch.base_offset, batch.producer_id, batch.base_sequence, batch.compression) == (7, 3, 11, codec)
    assert batch.offset_deltas == list(range(len(rows))) and batch.max_timestamp == max(times)


def _kafka_python_batch(codec, rows, transactional=False):
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=codec,
                                        is_transactional=transactional, producer_id=5,
                                        producer_epoch=0, base_sequence=0, batch_size=1 << 20)
    for offset, (key, value, ts, headers) in enumerate(rows):
        builder.append(offset, timestamp=ts, key=key, value=value, headers=headers)
    return bytes(builder.build())


@pytest.mark.parametrize("codec", CODECS)
@settings(max_examples=scaled(30))
@given(rows=records)
def test_kafka_python_batches_decode_here(codec, rows):
    rows = [(k, v, t, [(hk, hv if hv is not None else b"") for hk, hv in h]) for k, v, t, h in rows]
    batch = rb.decode_batch(_kafka_python_batch(codec, rows))
    assert batch.compression in (codec, 0) and batch.producer_id == 5  # it skips codecs that grow
    assert list(zip(batch.keys, batch.values, batch.timestamps(), batch.headers)) == rows


@pytest.mark.parametrize("codec", CODECS)
@settings(max_examples=scaled(30))
@given(rows=records, log_append_time=st.booleans())
def test_batches_encoded_here_decode_with_kafka_python(codec, rows, log_append_time):
    keys, values, times, headers = map(list, zip(*rows))
    data = rb.encode_batch(values, keys, times, headers, codec=codec, base_offset=100,
                           timestamp_type=rb.LOG_APPEND_TIME if log_append_time else rb.CREATE_TIME,
                           max_timestamp=99 if log_append_time else None)
    theirs = DefaultRecordBatch(data)
    assert theirs.validate_crc() and theirs.compression_type == codec
    got = list(theirs)
    assert [r.offset for r in got] == list(range(100, 100 + len(rows)))
    assert [(r.key, r.value, list(r.headers)) for r in got] == list(zip(keys, values, headers))
    assert [r.timestamp for r in got] == ([99] * len(rows) if log_append_time else times)
    assert theirs.timestamp_type == int(log_append_time)


@pytest.mark.parametrize("codec", CODECS)
def test_compressed_kafka_python_batches_decode_here(codec):
    rows = [(b"key", b"value %d " % i * 20, 1000 + i, [("h", b"v")]) for i in range(200)]
    batch = rb.decode_batch(_kafka_python_batch(codec, rows))
    assert batch.compression == codec
    assert list(zip(batch.keys, batch.values, batch.timestamps(), batch.headers)) == rows


def test_transactional_and_control_bits():
    batch = rb.decode_batch(_kafka_python_batch(0, [(None, b"v", 1, [])], transactional=True))
    assert batch.is_transactional and not batch.is_control and batch.timestamp_type == rb.CREATE_TIME


@pytest.mark.parametrize("codec", CODECS)
@given(rows=records, lat=st.integers(0, 1 << 42), base_offset=st.integers(0, 1 << 40))
def test_kafka_to_tslog_and_back(codec, rows, lat, base_offset):
    keys, values, times, headers = map(list, zip(*rows))
    kafka = rb.decode_batch(rb.encode_batch(values, keys, times, headers, codec=codec,
                                            producer_id=8, producer_epoch=2, base_sequence=4))
    tslog = bytearray(convert.kafka_to_tslog(kafka))
    stamp(tslog, base_offset, 3, lat)
    stored = list(iter_records(bytes(tslog)))
    plain_headers = [[(k, b"" if v is None else v) for k, v in h] for h in headers]
    assert [(r.key, r.value, r.create_time, r.headers) for r in stored] == list(
        zip(keys, values, times, plain_headers))
    for kind, expected in ((rb.CREATE_TIME, times), (rb.LOG_APPEND_TIME, [lat] * len(rows))):
        back = rb.decode_batch(convert.tslog_to_kafka(bytes(tslog), kind, codec=codec))
        assert back.base_offset == base_offset and back.timestamps() == expected
        assert (back.keys, back.values, back.headers) == (keys, values, plain_headers)
        assert (back.producer_id, back.producer_epoch, back.base_sequence) == (8, 2, 4)
        assert DefaultRecordBatch(convert.tslog_to_kafka(bytes(tslog), kind)).validate_crc()


def test_a_batch_with_offset_gaps_is_not_converted():
    batch = rb.decode_batch(rb.encode_batch([b"a", b"b"]))
    with pytest.raises(KafkaBatchError):
        convert.kafka_to_tslog(batch._replace(offset_deltas=[0, 2]))


def test_crc_mismatch_and_old_magic():
    data = bytearray(rb.encode_batch([b"value"]))
    data[-1] ^= 1
    with pytest.raises(KafkaBatchError, match="CRC"):
        rb.decode_batch(bytes(data))
    data[16] = 1
    with pytest.raises(KafkaBatchError, match="magic"):
        rb.decode_batch(bytes(data))


def test_an_unknown_codec_is_unsupported_compression():
    data = bytearray(rb.encode_batch([b"value"]))
    data[22] |= 5  # attributes' low byte
    with pytest.raises(UnsupportedCompression) as caught:
        rb.decode_batch(bytes(data), verify_crc=False)
    assert caught.value.error_code == 76


def test_split_batches_drops_a_partial_tail_only_when_asked():
    one, two = rb.encode_batch([b"a"]), rb.encode_batch([b"b"], base_offset=1)
    records = one + two[:-3]
    assert [bytes(b) for b in rb.split_batches(records, allow_partial_tail=True)] == [one]
    with pytest.raises(KafkaBatchError):
        rb.split_batches(records)
    assert [b.values for b in rb.iter_batches(one + two)] == [[b"a"], [b"b"]]


@pytest.mark.parametrize("codec", CODECS)
@settings(max_examples=scaled(40))
@given(rows=records, data=st.data())
def test_truncated_or_flipped_batches_raise_typed_errors(codec, rows, data):
    keys, values, times, headers = map(list, zip(*rows))
    batch = rb.encode_batch(values, keys, times, headers, codec=codec)
    cut = data.draw(st.integers(0, len(batch) - 1))
    with pytest.raises(KafkaBatchError):
        rb.decode_batch(batch[:cut])
    flipped = bytearray(batch)
    flipped[data.draw(st.integers(0, len(batch) - 1))] ^= data.draw(st.integers(1, 255))
    try:
        rb.decode_batch(bytes(flipped), verify_crc=data.draw(st.booleans()))
    except BatchFormatError:
        pass


@settings(max_examples=scaled(200))
@given(st.binary(max_size=300))
def test_random_bytes_raise_typed_errors(data):
    header = rb.HEADER.pack(0, len(data) + 49, 0, 2, 0, 0, 0, 0, 0, -1, -1, -1, 3)
    for candidate in (data, header + data):
        try:
            rb.decode_batch(candidate, verify_crc=False)
        except BatchFormatError:
            pass
