"""glibc malloc settings for a daemon that moves megabytes per request.

Why: a Fetch answered with 4 MB (a follower catching up, a consumer far behind) allocates a
few buffers of that size per request (the file read, the received frame, the decoded bytes)
and frees them right after. glibc hands blocks that big to mmap, or, once its threshold has
grown, takes them from the heap and gives the freed top back to the kernel: either way the
next request faults in fresh, zeroed pages. A follower copying at full speed took 55 page
faults per 1000-record batch; with blocks up to 32 MB kept in the heap and up to 128 MB of
free heap kept for reuse, none, and followers caught up a quarter faster (bench/broker.py's
replication section, "until every replica has them").

The cost is memory the process keeps after a burst of large requests: at most the free heap
kept (128 MB) beyond what it uses. A ``MALLOC_*`` environment variable the operator sets
wins: glibc has read it already, and nothing here runs then. Other C libraries' allocators
(musl, macOS) keep their own counsel.
"""

from __future__ import annotations

import ctypes
import os

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD_BYTES = 32 << 20  # glibc's maximum on 64-bit
TRIM_THRESHOLD_BYTES = 128 << 20


def keep_large_blocks_in_the_heap() -> bool:
    """Apply the settings above; False if this is not glibc or the operator chose."""
    if any(name.startswith("MALLOC_") for name in os.environ):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)
                and mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES))
