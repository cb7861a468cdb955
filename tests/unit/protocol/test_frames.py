"""Framing: what goes in as frames comes out as the same frames, and limits hold."""

import pytest

from tslog.protocol import (
    ErrorCode,
    FrameReceiver,
    FrameTooLargeError,
    LocalProtocolError,
    RemoteProtocolError,
    encode_frame,
    frame_prefix,
)


def test_frame_is_a_big_endian_length_then_the_body():
    assert encode_frame(b"abc") == b"\x00\x00\x00\x03abc"
    assert encode_frame(b"") == b"\x00\x00\x00\x00"
    assert frame_prefix(0x01020304) == b"\x01\x02\x03\x04"


def test_prefix_refuses_lengths_four_bytes_cannot_hold():
    with pytest.raises(LocalProtocolError) as caught:
        frame_prefix(2**32)
    assert caught.value.error_code is ErrorCode.MESSAGE_TOO_LARGE
    with pytest.raises(LocalProtocolError):
        frame_prefix(-1)


def test_several_frames_in_one_chunk_come_out_in_order():
    decoder = FrameReceiver()
    stream = encode_frame(b"one") + encode_frame(b"") + encode_frame(b"three")
    assert decoder.feed(stream) == [b"one", b"", b"three"]
    assert decoder.buffered_bytes == 0


def test_a_frame_fed_one_byte_at_a_time_appears_once_complete():
    decoder = FrameReceiver()
    stream = encode_frame(b"hello")
    for byte in stream[:-1]:
        assert decoder.feed(bytes([byte])) == []
    assert decoder.feed(stream[-1:]) == [b"hello"]


def test_partial_frame_stays_buffered_across_feeds():
    decoder = FrameReceiver()
    stream = encode_frame(b"first") + encode_frame(b"second")
    assert decoder.feed(stream[:12]) == [b"first"]
    assert decoder.buffered_bytes == 3
    assert decoder.feed(stream[12:]) == [b"second"]


def test_returned_frames_do_not_change_when_more_data_arrives():
    decoder = FrameReceiver()
    (frame,) = decoder.feed(encode_frame(b"keep") + b"\x00\x00")
    decoder.feed(b"\x00\x04zzzz")
    assert frame == b"keep"
    assert isinstance(frame, bytes)


def test_accepts_memoryview_and_bytearray_input():
    decoder = FrameReceiver()
    assert decoder.feed(memoryview(encode_frame(b"a"))) == [b"a"]
    assert decoder.feed(bytearray(encode_frame(b"b"))) == [b"b"]


def test_frame_of_exactly_the_maximum_is_accepted():
    decoder = FrameReceiver(max_frame_bytes=10)
    assert decoder.feed(encode_frame(b"x" * 10)) == [b"x" * 10]


def test_oversize_prefix_raises_before_any_body_arrives():
    decoder = FrameReceiver(max_frame_bytes=10)
    with pytest.raises(FrameTooLargeError) as caught:
        decoder.feed(b"\x00\x00\x00\x0b")  # 11 announced, no body sent
    error = caught.value
    assert isinstance(error, RemoteProtocolError)
    assert error.error_code is ErrorCode.MESSAGE_TOO_LARGE
    assert (error.length, error.max_frame_bytes) == (11, 10)
    assert decoder.buffered_bytes == 0  # nothing of the peer's claim is held


def test_decoder_stays_failed_after_an_oversize_frame():
    decoder = FrameReceiver(max_frame_bytes=1)
    with pytest.raises(FrameTooLargeError):
        decoder.feed(encode_frame(b"too big"))
    with pytest.raises(FrameTooLargeError):
        decoder.feed(encode_frame(b"a"))


def test_eof_inside_a_frame_is_a_remote_error():
    decoder = FrameReceiver()
    decoder.feed(encode_frame(b"whole"))
    decoder.feed_eof()  # clean end: nothing pending
    decoder.feed(b"\x00\x00\x00\x05ab")
    with pytest.raises(RemoteProtocolError):
        decoder.feed_eof()


def test_large_frame_in_small_chunks_is_reassembled_exactly():
    body = bytes(range(256)) * 16384  # 4 MiB
    stream = encode_frame(body) + encode_frame(b"tail")
    decoder = FrameReceiver()
    frames = []
    for start in range(0, len(stream), 1500):
        frames.extend(decoder.feed(stream[start:start + 1500]))
    assert frames == [body, b"tail"]
    assert decoder.buffered_bytes == 0


def test_rejects_a_nonsense_limit():
    with pytest.raises(ValueError):
        FrameReceiver(max_frame_bytes=-1)
