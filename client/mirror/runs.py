"""Cutting fetched batches into runs: what one ``send_section`` (one Produce batch) carries.

Why runs are sized here, from the target topic's limit: a run is one Produce batch, and the
target refuses a batch over its ``max.message.bytes``. Records grow on the target by the
reserved headers (``limits.py``), so a run is filled by its size on the target (``weight``,
an upper bound of its records section) and closed before it would pass the limit. Fewer,
larger runs mean fewer acknowledged round trips (each wave waits for the last), so a run is
as large as the target's limit allows less ``BATCH_OVERHEAD`` (the batch header and the
section's fixed fields, which ``weight`` leaves out), and never more than ``RUN_BYTES``.
Since ``weight`` is a bound and not an estimate, no further margin is needed (there was one
of 1/8 while it was an estimate). One record is never cut: a run of one record always goes,
and the target topic's limit is sized so that it fits.

The work is per batch, not per record: the weight of a slice comes from the columns'
offsets arrays, and a batch larger than a run is cut with one ``searchsorted`` per piece.
Only records with headers of their own are measured one by one.
"""

from __future__ import annotations

import numpy as np

from .limits import PER_RECORD_BYTES, SETTING
from .sections import Slice

RUN_BYTES = 1 << 20
# Bytes of a batch that ``weight`` does not count: the 80-byte batch header, the section's
# three sizes (12) and the headers list's array header (up to 5), rounded up.
BATCH_OVERHEAD = 128
MIN_RUN_BYTES = 1024  # a topic allowing less than this still gets one record per run
# Per record on the target beyond its key and value: the reserved headers and the CreateTime,
# key length and value length columns.
RECORD_BYTES = PER_RECORD_BYTES + 16


def _own_header_bytes(entries) -> list[int]:
    """An upper bound of each record's own headers' msgpack bytes (0 for none)."""
    return [sum(len(name) + len(value) + 11 for name, value in entry) if entry else 0
            for entry in entries]


def weight(piece: Slice) -> int:
    """An upper bound of the bytes ``piece`` becomes on the target."""
    total = piece.data_bytes + RECORD_BYTES * piece.count
    own = piece.batch.columns.headers
    if own is not None:
        total += sum(_own_header_bytes(own[piece.start:piece.stop]))
    return total


def run_bytes(target_configs: dict) -> int:
    """Bytes per run for a target topic with these configs."""
    entry = target_configs.get(SETTING)
    limit = RUN_BYTES if entry is None else int(entry.value) - BATCH_OVERHEAD
    return max(min(limit, RUN_BYTES), MIN_RUN_BYTES)


def _cumulative(batch, start: int, stop: int) -> np.ndarray:
    """Target bytes of records ``start`` to ``start + j``, for j in 0..stop - start."""
    columns = batch.columns
    keys, values = columns.key_offsets, columns.value_offsets
    data = (keys[start:stop + 1] - keys[start]) + (values[start:stop + 1] - values[start])
    cumulative = data.astype(np.int64) + RECORD_BYTES * np.arange(stop - start + 1)
    if columns.headers is not None:
        own = _own_header_bytes(columns.headers[start:stop])
        cumulative[1:] += np.cumsum(own, dtype=np.int64)
    return cumulative


def slices(batch, limit: int = RUN_BYTES) -> list[Slice]:
    """A fetched batch's records from ``batch.start`` on, cut in slices of at most ``limit``
    bytes on the target (a single record larger than that is a slice of its own)."""
    start, stop = batch.start, batch.columns.record_count
    if stop <= start:
        return []
    whole = Slice(batch, start, stop)
    if weight(whole) <= limit:
        return [whole]
    cumulative = _cumulative(batch, start, stop)
    pieces, first = [], start
    while first < stop:
        reach = int(np.searchsorted(cumulative, cumulative[first - start] + limit, "right"))
        end = min(max(start + reach - 1, first + 1), stop)
        pieces.append(Slice(batch, first, end))
        first = end
    return pieces


def plan_runs(batches, limits: dict) -> dict:
    """{(topic, partition): [run, ...]} where a run is a list of consecutive slices of one
    partition, at most ``limits[topic]`` bytes on the target unless it is one record."""
    queues: dict = {}
    for batch in batches:
        limit = limits[batch.topic]
        for piece in slices(batch, limit):
            runs = queues.setdefault((batch.topic, batch.partition), [[[], 0]])
            size = weight(piece)
            if runs[-1][0] and runs[-1][1] + size > limit:
                runs.append([[], 0])
            runs[-1][0].append(piece)
            runs[-1][1] += size
    return {key: [run for run, _ in runs] for key, runs in queues.items()}
