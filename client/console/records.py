"""Finding the records at a moment (or an offset) in every partition, and previewing them.

A moment becomes one offset per partition through the time index (one ListOffsets for all
partitions); an offset is taken as given. From those positions the console reads a page: up to
``limit`` records per partition, in one consumer that fetches every partition at once and
stops as soon as each has its page or reached the log end. Paging is by positions, so "later"
and "earlier" are exact even when many records share a millisecond: later starts after the
last record shown, earlier ends just before the first.

One consumer serves every page (a lock takes turns): a new one per page would pay a
connection and a Metadata each time.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass

from tslog.client.aio import AsyncAdmin, AsyncConsumer, TopicPartition

from .reads import LATEST, bounds

PREVIEW_BYTES = 300  # of a key or value shown on a page; the rest is elided
READ_TIMEOUT_S = 10.0
FORMATS = ("text", "hex", "json")
# Per partition per fetch: a page needs a few records, and the client decodes every batch a
# fetch brings; the broker still sends a first batch larger than this whole, and the reader
# fetches again for more.
_PARTITION_FETCH_BYTES = 256


@dataclass(frozen=True)
class Page:
    topic: str
    positions: dict  # partition -> the offset the page starts at
    records: dict  # partition -> [ConsumerRecord]
    bounds: dict  # partition -> (log start, log end)

    def later(self) -> dict:
        """Positions after the last record shown (where none was, the same position)."""
        return {p: (self.records[p][-1].offset + 1 if self.records.get(p) else offset)
                for p, offset in self.positions.items()}

    def earlier(self, limit: int) -> dict:
        return {p: max(self.bounds[p][0], offset - limit) for p, offset in self.positions.items()}


def parse_positions(text: str) -> dict:
    """``"0:12,1:40"`` -> {0: 12, 1: 40}. Raises ValueError."""
    positions = {}
    for item in filter(None, text.split(",")):
        partition, _, offset = item.partition(":")
        positions[int(partition)] = int(offset)
    return positions


def format_positions(positions: dict) -> str:
    return ",".join(f"{p}:{o}" for p, o in sorted(positions.items()))


async def positions_at(admin: AsyncAdmin, topic: str, partitions: list, moment_ms: int,
                       timestamp_type: str = "append") -> dict:
    """{partition: first offset at or after the moment}; the log end where none is."""
    tps = [TopicPartition(topic, p) for p in partitions]
    found, ends = await asyncio.gather(
        admin.list_offsets({tp: moment_ms for tp in tps}, timestamp_type),
        admin.list_offsets({tp: LATEST for tp in tps}))
    return {tp.partition: found[tp].offset if found[tp] is not None else
            (ends[tp].offset if ends[tp] is not None else 0) for tp in tps}


class RecordReader:
    """Reads pages of records for the console; ``close()`` when the console stops."""

    def __init__(self, bootstrap: str, security) -> None:
        self._consumer = AsyncConsumer(bootstrap, enable_auto_commit=False, fetch_max_wait_ms=50,
                                       max_partition_fetch_bytes=_PARTITION_FETCH_BYTES,
                                       client_id="tslog-console", security=security)
        self._lock = asyncio.Lock()
        self._started = False

    async def close(self) -> None:
        await self._consumer.close()

    async def page(self, admin: AsyncAdmin, topic: str, positions: dict, limit: int) -> Page:
        """Up to ``limit`` records per partition from each position (clamped to the log)."""
        tps = {p: TopicPartition(topic, p) for p in positions}
        limits = await bounds(admin, list(tps.values()))
        span = {p: limits[tp] for p, tp in tps.items()}
        starts = {p: min(max(positions[p], span[p][0]), span[p][1]) for p in positions}
        wanted = {p: min(limit, span[p][1] - starts[p]) for p in positions}
        records = {p: [] for p in positions}
        async with self._lock:
            if not self._started:
                await self._consumer.start()
                self._started = True
            await self._read(tps, starts, wanted, records)
        return Page(topic, starts, records, span)

    async def _read(self, tps: dict, starts: dict, wanted: dict, records: dict) -> None:
        reading = [p for p in starts if wanted[p] > 0]
        self._consumer.assign([tps[p] for p in reading])
        for p in reading:
            self._consumer.seek(tps[p], starts[p])
        deadline = time.monotonic() + READ_TIMEOUT_S
        while reading and time.monotonic() < deadline:
            for record in await self._consumer.poll(100):
                page = records.get(record.partition)
                if page is not None and len(page) < wanted[record.partition] \
                        and record.offset >= starts[record.partition]:
                    page.append(record)
            done = [p for p in reading if len(records[p]) >= wanted[p]]
            if done:
                reading = [p for p in reading if p not in done]
                self._consumer.assign([tps[p] for p in reading])
        self._consumer.assign([])


def preview(data: bytes | None, how: str, mark: bool = True) -> str:
    """Key, value or header bytes as text, hex or indented JSON, cut at PREVIEW_BYTES.
    ``mark``: say "(not JSON)" when JSON was asked and the bytes are not (values; keys and
    headers are often plain strings, and the note would only be noise there)."""
    if data is None:
        return "null"
    cut = data[:PREVIEW_BYTES]
    more = f" … ({len(data)} bytes)" if len(data) > PREVIEW_BYTES else ""
    if how == "hex":
        return cut.hex(" ") + more
    if how == "json" and not more:
        try:
            return json.dumps(json.loads(data), indent=1, ensure_ascii=False)
        except ValueError:
            return cut.decode("utf-8", "replace") + ("  (not JSON)" if mark else "")
    return cut.decode("utf-8", "replace") + more
