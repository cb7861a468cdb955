"""Pieces of a byte array as a few runs of one stride: strided copies instead of an index
per byte.

Kafka records of one size (fixed-size keys and values; only the offset delta's varint width
varies) put every field of theirs at one stride from the record before, so a column of
varints, or the keys and values, moves by one strided slice per run rather than by a
fancy-indexed store through an index array of every position (several times cheaper at
100-byte values). ``record_columns`` uses these both ways; when the pieces fall in more
than ``MAX_RUNS`` runs, ``ragged_index`` gives the index array after all.
"""

from __future__ import annotations

import numpy as np

MAX_RUNS = 16  # runs of one stride worth strided copies (``uniform_runs``, ``stride_runs``)


def stride_runs(positions: np.ndarray, max_runs: int):
    """``positions`` (increasing) as a few runs of one stride: [(first, count, stride,
    start)], or None when there are more than ``max_runs``. Records of one size put every
    field of theirs at one stride, so a column's bytes are stored by a strided slice per
    run, several times cheaper than a fancy-indexed store of every position."""
    n = len(positions)
    if n < 3:
        return None
    steps = np.diff(positions)
    breaks = np.flatnonzero(steps[1:] != steps[:-1]) + 1
    if len(breaks) >= max_runs:
        return None
    edges = [0] + breaks.tolist() + [n - 1]
    firsts = np.array(edges, dtype=np.int64)
    step_list = steps[firsts[:-1]].tolist() + [1]
    counts = np.diff(edges).tolist() + [1]
    return list(zip(edges, counts, step_list, positions[firsts].tolist()))


def strided_store(out: np.ndarray, positions: np.ndarray, runs, values: np.ndarray,
                  shift: int = 0) -> None:
    """``out[positions + shift] = values``, by strided slices when ``runs`` is known."""
    if runs is None:
        out[positions + shift if shift else positions] = values
        return
    for first, count, stride, start in runs:
        start += shift
        out[start:start + stride * (count - 1) + 1:stride] = values[first:first + count]


def ragged_index(starts: np.ndarray, lengths: np.ndarray, total: int) -> np.ndarray:
    """Indices ``starts[i] + 0 .. starts[i] + lengths[i] - 1`` for every i, in order, as
    index arithmetic, not a loop per piece: a run of ones whose first element per piece is
    the jump from the previous piece's last index, summed up (two passes over ``total``)."""
    present = lengths > 0
    starts, lengths = starts[present], lengths[present]
    dtype = np.int32 if int(starts[-1]) + int(lengths[-1]) < 1 << 31 else np.int64
    steps = np.ones(total, dtype=dtype)
    firsts = np.zeros(len(lengths), dtype=np.int64)
    np.cumsum(lengths[:-1], out=firsts[1:])
    jumps = np.empty(len(starts), dtype=np.int64)
    jumps[0] = starts[0]
    jumps[1:] = starts[1:] - (starts[:-1] + lengths[:-1] - 1)
    steps[firsts] = jumps
    return np.cumsum(steps, dtype=dtype)


def uniform_runs(starts: np.ndarray, sizes: np.ndarray, max_runs: int = MAX_RUNS):
    """The pieces as a few runs of one size at one stride, or None when there are more
    than ``max_runs``. Fixed-size keys and values make records of one size but for the
    offset-delta varint's width (1 byte below 64, 2 below 8192, ...), so a batch of them is
    two or three such runs: a strided copy per run then moves them all, with no index array
    per byte (a third of the time of the fancy-indexed copy at 100-byte values). Records of
    several batches laid out at once (``record_columns.layout_records`` with a ``lead``) add
    a run or two per batch, so their caller raises ``max_runs`` with the batch count."""
    n = len(starts)
    if n == 1:
        return [(0, 1, 1, int(sizes[0]), int(starts[0]))]
    steps = np.diff(starts)
    # Pieces 0..n-2 grouped by (step to the next piece, size); the last piece runs alone.
    breaks = np.flatnonzero((steps[1:] != steps[:-1]) | (sizes[1:-1] != sizes[:-2])) + 1
    if len(breaks) >= max_runs:
        return None
    edges = [0] + breaks.tolist() + [n - 1]
    firsts = np.array(edges, dtype=np.int64)  # the last edge: the lone last piece
    step_list = steps[firsts[:-1]].tolist() + [1]
    size_list, start_list = sizes[firsts].tolist(), starts[firsts].tolist()
    counts = np.diff(edges).tolist() + [1]
    return list(zip(edges, counts, step_list, size_list, start_list))


def run_views(array: np.ndarray, runs):
    """(strided (count, size) view of ``array``, offset into the blob) per run; built with
    the ``ndarray`` constructor, a tenth of ``as_strided``'s cost (it matters at a few
    runs per batch over a response's batches)."""
    offset = 0
    for _first, count, stride, size, start in runs:
        if size:
            yield (np.ndarray((count, size), np.uint8, array, start, (stride, 1)), offset)
        offset += count * size
