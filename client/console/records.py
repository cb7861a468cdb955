"""Finding the records at a moment (or an offset) in every partition, and previewing them.

A moment becomes one offset per partition through the time index (one ListOffsets for all
partitions; the log end only where no record is that late); an offset is taken as given.
From those positions the console reads a page: up to ``limit`` records per partition,
through ``Admin.read_records`` (one Fetch per leader for every partition, about ``limit``
records' worth of bytes each, nothing read ahead or decoded beyond the page). Paging is by
positions, so "later" and "earlier" are exact even when many records share a millisecond:
later starts after the last record shown, earlier ends just before the first.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass

from tslog.client.aio import AsyncAdmin, TopicPartition

from .reads import LATEST, bounds

# Partitions asked per ListOffsets and Fetch of a find at a moment: several shares in flight
# let the console decode one answer while the broker works on the next.
SHARE_PARTITIONS = 100
PREVIEW_BYTES = 300  # of a key or value shown on a page; the rest is elided
FORMATS = ("text", "hex", "json")


@dataclass(frozen=True)
class Page:
    topic: str
    positions: dict  # partition -> the offset the page starts at
    records: dict  # partition -> [ConsumerRecord]
    floors: dict  # partition -> the lowest offset "earlier" goes to (its log start, or 0)

    def later(self) -> dict:
        """Positions after the last record shown (where none was, the same position)."""
        return {p: (self.records[p][-1].offset + 1 if self.records.get(p) else offset)
                for p, offset in self.positions.items()}

    def earlier(self, limit: int) -> dict:
        return {p: max(self.floors[p], offset - limit) for p, offset in self.positions.items()}


def parse_positions(text: str) -> dict:
    """``"0:12,1:40"`` -> {0: 12, 1: 40}. Raises ValueError."""
    positions = {}
    for item in filter(None, text.split(",")):
        partition, _, offset = item.partition(":")
        positions[int(partition)] = int(offset)
    return positions


def format_positions(positions: dict) -> str:
    return ",".join(f"{p}:{o}" for p, o in sorted(positions.items()))


async def page_at(admin: AsyncAdmin, topic: str, partitions: list, moment_ms: int,
                  limit: int, timestamp_type: str = "append") -> Page:
    """Up to ``limit`` records per partition from the first record at or after the moment
    (from the log end where none is that late). Per share of ``SHARE_PARTITIONS``
    partitions, one ListOffsets finds the moment, then one Fetch reads from there; the shares
    go out together, so the broker answers one share while the console decodes another
    (a topic of up to that many partitions is one ListOffsets and one Fetch). Only the
    partitions with no record that late ask for their log end (a second ListOffsets, for
    none of them when the moment is in the past), and are not read. The log starts are not
    asked: a page at a moment starts inside the log, and "earlier" positions below the log
    start are clamped when that page is read (``read_page``)."""
    shares = [partitions[i:i + SHARE_PARTITIONS]
              for i in range(0, len(partitions), SHARE_PARTITIONS)]
    found = await asyncio.gather(*(_share_at(admin, topic, share, moment_ms, limit,
                                             timestamp_type) for share in shares))
    positions, records = {}, {}
    for share_positions, share_records in found:
        positions.update(share_positions)
        records.update(share_records)
    return Page(topic, positions, records, dict.fromkeys(positions, 0))


async def _share_at(admin: AsyncAdmin, topic: str, partitions: list, moment_ms: int,
                    limit: int, timestamp_type: str) -> tuple[dict, dict]:
    """({partition: position}, {partition: [records]}) of ``page_at`` for some partitions."""
    tps = {p: TopicPartition(topic, p) for p in partitions}
    found = await admin.list_offsets({tp: moment_ms for tp in tps.values()}, timestamp_type)
    after = [tp for tp in tps.values() if found[tp] is None]
    ends = await admin.list_offsets({tp: LATEST for tp in after}) if after else {}
    positions = {p: found[tp].offset if found[tp] is not None
                 else (ends[tp].offset if ends[tp] is not None else 0) for p, tp in tps.items()}
    reading = {tps[p]: positions[p] for p in positions if found[tps[p]] is not None}
    records = await admin.read_records(reading, limit) if reading else {}
    return positions, {p: records.get(tp, []) for p, tp in tps.items()}


async def read_page(admin: AsyncAdmin, topic: str, positions: dict, limit: int) -> Page:
    """Up to ``limit`` records per partition from each position (clamped to the log; the
    records end at the log end as it was when the bounds were read)."""
    tps = {p: TopicPartition(topic, p) for p in positions}
    limits = await bounds(admin, list(tps.values()))
    span = {p: limits[tp] for p, tp in tps.items()}
    starts = {p: min(max(positions[p], span[p][0]), span[p][1]) for p in positions}
    reading = {tps[p]: starts[p] for p in positions if starts[p] < span[p][1]}
    found = await admin.read_records(reading, limit) if reading else {}
    records = {p: found.get(tp, [])[:span[p][1] - starts[p]] for p, tp in tps.items()}
    return Page(topic, starts, records, {p: span[p][0] for p in positions})


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
