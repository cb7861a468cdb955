"""tslog's sans-I/O protocol: record batches, frames, messages and error codes.

Nothing in this package touches sockets, files or asyncio; the broker and the client feed it
bytes and get bytes back. That keeps every codec testable byte for byte, and lets the broker's
storage (which must not import asyncio) share the batch format with the wire.
"""

from .batch_header import (
    ATTR_HAS_HEADERS,
    COMPRESSION_MASK,
    COMPRESSION_NONE,
    COMPRESSION_ZSTD,
    CRC_START,
    FORMAT_MAGIC,
    HEADER_SIZE,
    HEADER_STRUCT,
    NO_TIMESTAMP,
    BatchFormatError,
    BatchHeader,
    check_header,
    compute_crc,
    pack_header,
    parse_header,
    peek_length,
    stamp,
    validate_batch,
    verify_crc,
)
from .errors import ErrorCode, LocalProtocolError, ProtocolError, RemoteProtocolError
from .frames import (
    FRAME_PREFIX_SIZE,
    MAX_FRAME_BYTES,
    FrameReceiver,
    FrameTooLargeError,
    encode_frame,
    frame_prefix,
)
from .records import (
    MAX_UNCOMPRESSED_BYTES,
    CorruptRecordsError,
    Record,
    RecordColumns,
    build_batch,
    decode_columns,
    iter_records,
    split_batches,
    to_arrow,
)

__all__ = [
    "ATTR_HAS_HEADERS",
    "COMPRESSION_MASK",
    "COMPRESSION_NONE",
    "COMPRESSION_ZSTD",
    "CRC_START",
    "FORMAT_MAGIC",
    "FRAME_PREFIX_SIZE",
    "HEADER_SIZE",
    "HEADER_STRUCT",
    "MAX_FRAME_BYTES",
    "MAX_UNCOMPRESSED_BYTES",
    "NO_TIMESTAMP",
    "BatchFormatError",
    "BatchHeader",
    "CorruptRecordsError",
    "ErrorCode",
    "FrameReceiver",
    "FrameTooLargeError",
    "LocalProtocolError",
    "ProtocolError",
    "Record",
    "RecordColumns",
    "RemoteProtocolError",
    "build_batch",
    "check_header",
    "compute_crc",
    "decode_columns",
    "encode_frame",
    "frame_prefix",
    "iter_records",
    "pack_header",
    "parse_header",
    "peek_length",
    "split_batches",
    "stamp",
    "to_arrow",
    "validate_batch",
    "verify_crc",
]
