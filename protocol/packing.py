"""``pack``: ``msgpack.packb`` with a Packer kept per thread.

Why: ``msgpack.packb`` builds a new ``Packer``, with a 256 KiB buffer, for every call: a
noticeable share of the little a time lookup costs on each side of the wire (every request a client sends,
every answer a broker encodes). A Packer is not safe to share between threads (two packs
at once would interleave in its buffer), so each thread keeps its own. The buffer only grows;
after a rare large message the thread's Packer is dropped, so a thread does not keep a
buffer the size of the largest message it ever packed.
"""

from __future__ import annotations

import threading

import msgpack

# Above this, a Packer's grown buffer is let go with it (the next pack makes a new one).
KEEP_BUFFER_BYTES = 1024 * 1024

_per_thread = threading.local()


def pack(value) -> bytes:
    """``msgpack.packb(value, use_bin_type=True)``: the same bytes and the same exceptions
    (a Packer resets its buffer when a pack fails, so a failure leaves nothing behind)."""
    try:
        packer = _per_thread.pack
    except AttributeError:
        packer = _per_thread.pack = msgpack.Packer(use_bin_type=True).pack
    packed = packer(value)
    if len(packed) > KEEP_BUFFER_BYTES:
        del _per_thread.pack
    return packed
