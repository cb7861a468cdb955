"""What the broker's receive path costs per request, from received bytes to a decoded request.

    .venv/bin/python bench/frame_receive.py            # 7 runs, median
    .venv/bin/python bench/frame_receive.py --quick    # 3 runs

Two request shapes: one Produce request carrying a 1 MiB batch, arriving in 64 KiB reads (what
a socket hands over), and 200 small ListOffsets requests arriving together in one read
(pipelined lookups). For each, the time per request from the bytes to a request ready for its
handler, two ways in the same run:

- ``stream decoder``: the receive path before the protocol core, re-created here from its parts
  (received ``bytes`` appended to one buffer, each frame cut out as ``bytes``, then msgpack,
  which copies the records again);
- ``protocol core``: ``tslog.protocol.connection.Connection`` as the server uses it: the
  reads go into its buffers (a large frame's own buffer after the first read), and msgpack
  leaves the records in place.

Both count the copy out of the "socket" (into a new ``bytes`` for the decoder, into the core's
buffer for the core): the kernel makes it in real life.

The CRC32C of the same batch is printed beside them: the least any receive path must spend
on a batch it checks. It prints a table; it asserts nothing about timings.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from bench.storage import print_table  # noqa: E402
from tslog.protocol.batch_header import verify_crc  # noqa: E402
from tslog.protocol.connection import NEED_DATA, Connection, Role  # noqa: E402
from tslog.broker.server.connection import RECEIVE_SCRATCH_BYTES  # noqa: E402
from tslog.protocol.frames import FRAME_PREFIX, unzeroed_buffer  # noqa: E402
from tslog.protocol.messages import (  # noqa: E402
    ApiKey,
    RequestHeader,
    decode_request,
    encode_request,
)
from tslog.protocol.records import build_batch  # noqa: E402

READ_BYTES = 64 * 1024


def produce_frame(batch: bytes) -> bytes:
    body = {"acks": 1, "timeout_ms": 1000, "topics": [
        {"topic": "t", "partitions": [{"partition": 0, "records": batch}]}]}
    return encode_request(RequestHeader(ApiKey.PRODUCE, 0, 1, "bench"), body)


def lookup_frames(count: int) -> bytes:
    body = {"replica_id": -1, "timestamp_type": "append", "topics": [
        {"topic": "t", "partitions": [{"partition": 0, "timestamp": 1_700_000_000_000}]}]}
    return b"".join(encode_request(RequestHeader(ApiKey.LIST_OFFSETS, 0, i, "bench"), body)
                    for i in range(count))


def stream_decoder(reads: list[bytes]) -> int:
    """The pre-core path: bytearray append, ``bytes`` frame cut, msgpack with copies."""
    buffer = bytearray()
    requests = 0
    for read in reads:
        data = bytes(read)  # what the transport's recv makes; the core's path copies too
        buffer += data
        position = 0
        with memoryview(buffer) as view:
            while len(buffer) - position >= 4:
                (length,) = FRAME_PREFIX.unpack_from(view, position)
                if len(buffer) - position - 4 < length:
                    break
                frame = bytes(view[position + 4:position + 4 + length])
                position += 4 + length
                decode_request(frame)
                requests += 1
        del buffer[:position]
    return requests


def protocol_core(reads: list[bytes]) -> int:
    connection = Connection(Role.SERVER, record_views=True, allocate=unzeroed_buffer,
                            scratch_bytes=RECEIVE_SCRATCH_BYTES)  # as the broker makes it
    requests = 0
    for data in reads:
        position = 0
        while position < len(data):  # what recv_into does: fill the buffer offered
            target = connection.get_buffer()
            count = min(len(target), len(data) - position)
            target[:count] = data[position:position + count]
            connection.buffer_updated(count)
            position += count
            while connection.next_event() is not NEED_DATA:
                requests += 1
    return requests


def timed_us(receive, reads: list[bytes], requests: int, runs: int, repeat: int) -> float:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        for _ in range(repeat):
            assert receive(reads) == requests
        samples.append((time.perf_counter() - started) / repeat / requests * 1e6)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 runs")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    runs = 3 if args.quick else args.runs

    batch = build_batch([b"x" * 1000] * 1040)  # about 1 MiB
    big = produce_frame(batch)
    big_reads = [big[i:i + READ_BYTES] for i in range(0, len(big), READ_BYTES)]
    small_reads = [lookup_frames(200)]

    crc_us = timed_us(lambda reads: verify_crc(batch) or 1, [], 1, runs, 200)
    rows = []
    for label, reads, requests, repeat in (
            (f"Produce, {len(batch) / 2**20:.2f} MiB batch, 64 KiB reads", big_reads, 1, 200),
            ("ListOffsets x200, one read", small_reads, 200, 50)):
        old = timed_us(stream_decoder, reads, requests, runs, repeat)
        new = timed_us(protocol_core, reads, requests, runs, repeat)
        rows.append([label, f"{old:.1f}", f"{new:.1f}", f"{new / old:.2f}"])
    print_table(f"Receive path per request, median of {runs} runs (us)",
                ["request", "stream decoder", "protocol core", "core / decoder"], rows)
    print(f"  CRC32C of the same 1 MiB batch: {crc_us:.1f} us")


if __name__ == "__main__":
    main()
