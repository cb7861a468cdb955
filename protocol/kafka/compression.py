"""The compression codecs of Kafka's RecordBatch v2: gzip, snappy, lz4 and zstd.

Why these libraries: gzip is the standard library's; zstd is ``zstandard``, already tslog's
own batch codec; lz4 is the ``lz4`` package's frame format (what KIP-57 fixed Kafka's LZ4 to);
snappy comes from ``cramjam`` (the maintained Rust bindings python-snappy itself now wraps).
Kafka's Java client writes snappy in xerial's stream framing (a magic header then
length-prefixed blocks) and librdkafka reads and writes the same, so that is what is written
here; a raw snappy block is also accepted on read, as Kafka's broker does. A codec whose
library is missing raises ``UnsupportedCompression`` (UNSUPPORTED_COMPRESSION_TYPE) for that
batch only. Decompression is bounded: a batch that inflates past ``max_bytes`` is refused
rather than allowed to fill memory.
"""

from __future__ import annotations

import gzip
import struct
import zlib

from .errors import KafkaBatchError, UnsupportedCompression

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}
MAX_UNCOMPRESSED = 64 << 20  # the default ceiling on one batch's inflated records

try:
    import cramjam
except ImportError:  # pragma: no cover - the package is a dependency
    cramjam = None
try:
    import lz4.frame as lz4_frame
except ImportError:  # pragma: no cover
    lz4_frame = None
import zstandard

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024
_BLOCK_LENGTH = struct.Struct(">i")
_ZSTD_STEP = 4096


def available() -> list[int]:
    """The codecs this install can read and write."""
    return [c for c, ok in ((NONE, True), (GZIP, True), (SNAPPY, cramjam is not None),
                            (LZ4, lz4_frame is not None), (ZSTD, True)) if ok]


def compress(codec: int, data: bytes) -> bytes:
    if codec == NONE:
        return bytes(data)
    if codec == GZIP:
        return gzip.compress(data, compresslevel=6, mtime=0)
    if codec == SNAPPY:
        _need(cramjam, codec)
        out = [_XERIAL_HEADER]
        view = memoryview(data)
        for start in range(0, len(view), _XERIAL_BLOCK):
            block = bytes(cramjam.snappy.compress_raw(view[start:start + _XERIAL_BLOCK]))
            out += [_BLOCK_LENGTH.pack(len(block)), block]
        return b"".join(out)
    if codec == LZ4:
        _need(lz4_frame, codec)
        return lz4_frame.compress(data)
    if codec == ZSTD:
        return zstandard.ZstdCompressor(level=3).compress(data)
    raise UnsupportedCompression(f"unknown compression codec {codec}")


def decompress(codec: int, data, max_bytes: int = MAX_UNCOMPRESSED) -> bytes:
    """The inflated records of a batch; ``KafkaBatchError`` for corrupt or oversized input."""
    if codec == NONE:
        return bytes(data)
    try:
        if codec == GZIP:
            inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
            out = inflater.decompress(data, max_bytes + 1)
            _check_complete(inflater.eof, len(out), max_bytes)
        elif codec == SNAPPY:
            _need(cramjam, codec)
            out = _snappy_decompress(bytes(data), max_bytes)
        elif codec == LZ4:
            _need(lz4_frame, codec)
            inflater = lz4_frame.LZ4FrameDecompressor()
            out = inflater.decompress(bytes(data), max_length=max_bytes + 1)
            _check_complete(inflater.eof, len(out), max_bytes)
        elif codec == ZSTD:
            out = _zstd_decompress(bytes(data), max_bytes)
        else:
            raise UnsupportedCompression(f"unknown compression codec {codec}")
    except (KafkaBatchError, MemoryError):
        raise
    except Exception as exc:  # each library raises its own error type for corrupt input
        raise KafkaBatchError(f"{NAMES.get(codec, codec)} records do not decompress: {exc}") from None
    if len(out) > max_bytes:
        raise KafkaBatchError(f"records inflate past {max_bytes} bytes")
    return bytes(out)


def _check_complete(eof: bool, size: int, max_bytes: int) -> None:
    if size > max_bytes:
        raise KafkaBatchError(f"records inflate past {max_bytes} bytes")
    if not eof:
        raise KafkaBatchError("compressed records end before their stream does")


def _zstd_decompress(data: bytes, max_bytes: int) -> bytes:
    """Fed in small steps so one step cannot inflate far past ``max_bytes`` (zstd's
    run-length blocks reach ratios in the thousands); Java's and librdkafka's streamed
    frames carry no content size to check up front."""
    inflater = zstandard.ZstdDecompressor().decompressobj()
    out, total = [], 0
    for start in range(0, len(data), _ZSTD_STEP):
        chunk = inflater.decompress(data[start:start + _ZSTD_STEP])
        total += len(chunk)
        if total > max_bytes:
            raise KafkaBatchError(f"records inflate past {max_bytes} bytes")
        out.append(chunk)
    _check_complete(inflater.eof, total, max_bytes)
    return b"".join(out)


def _snappy_decompress(data: bytes, max_bytes: int) -> bytes:
    if not data.startswith(_XERIAL_MAGIC):
        if cramjam.snappy.decompress_raw_len(data) > max_bytes:
            raise KafkaBatchError(f"records inflate past {max_bytes} bytes")
        return bytes(cramjam.snappy.decompress_raw(data))
    pos, out, total = 16, [], 0
    while pos < len(data):
        if pos + 4 > len(data):
            raise KafkaBatchError("truncated xerial snappy block length")
        (length,) = _BLOCK_LENGTH.unpack_from(data, pos)
        block = data[pos + 4:pos + 4 + length]
        if length < 0 or len(block) != length:
            raise KafkaBatchError("truncated xerial snappy block")
        total += cramjam.snappy.decompress_raw_len(block)
        if total > max_bytes:
            raise KafkaBatchError(f"records inflate past {max_bytes} bytes")
        out.append(bytes(cramjam.snappy.decompress_raw(block)))
        pos += 4 + length
    return b"".join(out)


def _need(module, codec: int) -> None:
    if module is None:
        raise UnsupportedCompression(f"{NAMES[codec]} needs a library this install lacks")
