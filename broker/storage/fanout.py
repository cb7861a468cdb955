"""Running one disk call per partition for thousands of partitions, in threads.

Why: closing, checkpointing and saving a recovered log's recovery point each wait on the
file system (a file replaced atomically, a directory, a trimmed index). One after another, ten
thousand partitions wait for ten thousand times that; issued from a handful of threads at
once, the file system commits them together (ext4's journal takes every fsync waiting into one
commit), and the Python work between them runs while another thread waits. The GIL keeps the
Python part serial, so a few threads are enough. Work that waits on nothing (opening logs
without their fsyncs) runs faster on one thread: threads then only contend for the GIL.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable, TypeVar

T = TypeVar("T")
R = TypeVar("R")

THREADS = 16


def map_in_threads(function: Callable[[T], R], items: Iterable[T], name: str) -> list[R]:
    """``[function(item) for item in items]``, run by THREADS threads; results in order.
    The first exception is raised once every call has ended (the caller catches its own
    per-item errors where one must not stop the rest)."""
    items = list(items)
    if len(items) <= 1:
        return [function(item) for item in items]
    with ThreadPoolExecutor(min(THREADS, len(items)), thread_name_prefix=name) as pool:
        return list(pool.map(function, items))
