"""Frames as lists of buffers, so record bytes go to the socket without being copied.

Why: a Fetch response (or a Produce request) is almost all ``records`` bins. Packing it with
``msgpack.packb`` copies every record byte into the packed body, and prefixing the length
copies them again; at hundreds of MB/s those copies are a large share of the broker's time.
Here the message is packed with a small placeholder bin where each large ``records`` value
goes; the packed bytes are cut at the placeholders and the bins' own headers (msgpack
``bin 8/16/32``, the smallest that fits, exactly as ``packb`` would choose) are written by
hand. The result, ``[prefix + head, records, middle, records, ..., tail]``, is meant for
``transport.writelines``: its concatenation is byte for byte the frame ``encode_response``
or ``encode_request`` returns (tested), so peers see no difference.

Only ``topics[].partitions[].records`` values are left out, the one shape Produce requests and
Fetch responses share; anything smaller than ``MIN_CHUNK_BYTES`` is packed inline (the copy
costs less than another buffer). If the placeholder's bytes ever occur elsewhere in a packed
message (a string that happens to hold them), the cut would be ambiguous and the message is
packed whole instead, so the output is always right.
"""

from __future__ import annotations

import os
import struct

import msgpack

from .errors import LocalProtocolError
from .frames import frame_prefix
from .messages import RequestHeader, encode_request, encode_response
from .packing import pack

MIN_CHUNK_BYTES = 8192

_PLACEHOLDER = os.urandom(16)  # per process: no peer can know it in advance
_PACKED_PLACEHOLDER = msgpack.packb(_PLACEHOLDER, use_bin_type=True)
_BIN16 = struct.Struct(">BH")
_BIN32 = struct.Struct(">BI")


def _bin_header(length: int) -> bytes:
    if length < 0x100:
        return bytes((0xC4, length))
    if length < 0x10000:
        return _BIN16.pack(0xC5, length)
    return _BIN32.pack(0xC6, length)


def _hollow(body: dict) -> tuple[dict, list]:
    """A shallow copy of ``body`` with large ``records`` replaced by the placeholder, and the
    replaced values in packing order (msgpack packs maps in insertion order)."""
    blobs: list = []
    topics = body.get("topics")
    if type(topics) is not list:
        return body, blobs
    hollow_topics = []
    for group in topics:
        partitions = group.get("partitions") if type(group) is dict else None
        if type(partitions) is not list:
            hollow_topics.append(group)
            continue
        hollow_partitions = []
        for partition in partitions:
            records = partition.get("records") if type(partition) is dict else None
            if records is not None and len(records) >= MIN_CHUNK_BYTES:
                partition = dict(partition)
                partition["records"] = _PLACEHOLDER
                blobs.append(records)
            hollow_partitions.append(partition)
        hollow_topics.append({**group, "partitions": hollow_partitions})
    if not blobs:
        return body, blobs
    return {**body, "topics": hollow_topics}, blobs


def _chunks(message: list, blobs: list) -> list | None:
    try:
        head = pack(message)
    except (TypeError, ValueError, OverflowError) as exc:
        raise LocalProtocolError(f"message cannot be packed: {exc}") from None
    pieces = head.split(_PACKED_PLACEHOLDER)
    if len(pieces) != len(blobs) + 1:
        return None  # the placeholder's bytes occur inside some other value
    headers = [_bin_header(len(blob)) for blob in blobs]
    body_length = (len(head) - len(blobs) * len(_PACKED_PLACEHOLDER)
                   + sum(map(len, headers)) + sum(map(len, blobs)))
    out = [frame_prefix(body_length) + pieces[0] + headers[0], blobs[0]]
    for piece, header, blob in zip(pieces[1:], headers[1:], blobs[1:]):
        out.append(piece + header)
        out.append(blob)
    out.append(pieces[-1])
    return out


def encode_response_chunks(correlation_id: int, body: dict) -> list:
    """``encode_response(correlation_id, body)`` as a list of buffers (records not copied).

    Raises:
        LocalProtocolError: the body cannot be packed or framed.
    """
    hollow, blobs = _hollow(body)
    if blobs:
        chunks = _chunks([correlation_id, hollow], blobs)
        if chunks is not None:
            return chunks
    return [encode_response(correlation_id, body)]


def encode_request_chunks(header: RequestHeader, body: dict) -> list:
    """``encode_request(header, body, validate=False)`` as a list of buffers.

    Raises:
        LocalProtocolError: the body cannot be packed or framed.
    """
    hollow, blobs = _hollow(body)
    if blobs:
        api_key, api_version, correlation_id, client_id = header
        chunks = _chunks([int(api_key), api_version, correlation_id, client_id, hollow], blobs)
        if chunks is not None:
            return chunks
    return [encode_request(header, body, validate=False)]
