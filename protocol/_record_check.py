"""Whether a records section can be read: the one check shared by the broker and the readers.

A CRC proves the bytes arrived as they were sent, not that they make sense. A batch whose
header claims 2^31 - 1 records over a section that holds five passes every header check and
its CRC, and once appended it stops every consumer of the partition at that offset, for good.
So whatever accepts a batch (a leader from a producer, a follower from its leader, recovery
from a disk) runs ``check_section`` on it, and the readers' decoder (``records.py``) runs the
very same function before it builds columns: a batch the broker accepted is a batch every
consumer decodes, by construction rather than by two codes agreeing.

Cost: constant Python work per batch, whatever its record count. The section's own size
fields and the header's record count place every column; the columns are then checked against
the header's first/min/max CreateTimes and the blob sizes by ``_column_check.check_columns``:
a few numpy reductions over ``frombuffer`` views (nothing copied), or, for a batch of at most
``SCALAR_MAX_RECORDS`` records, where numpy's fixed cost per call would be most of the
append, one ``struct`` unpack and C-level ``min``/``max``/``sum``. The headers blob, when
there is one, is unpacked by msgpack's C code and its shape checked with C-level ``map`` and
set operations. A compressed section is inflated first (it is the only way to see it), with
``MAX_UNCOMPRESSED_BYTES`` as the bound whether or not the frame declares its size.

The section layout itself is documented in ``records.py`` and ``docs/storage-format.md``.
"""

from __future__ import annotations

import struct
import threading
from itertools import chain
from operator import itemgetter

import msgpack
import zstandard

from ._column_check import NULL_LENGTH, check_columns
from ._uniform_headers import all_like_the_first
from .errors import CorruptRecordsError

SECTION_SIZES = struct.Struct("<III")  # keys_bytes, values_bytes, headers_bytes
MAX_UNCOMPRESSED_BYTES = 64 * 1024 * 1024  # largest records section anyone will inflate

_ENTRY_TYPES = frozenset({type(None), tuple})  # a record's headers: nil or a list of pairs
_TUPLE = frozenset({tuple})
_PAIR_LENGTH = frozenset({2})
_STR = frozenset({str})
_BYTES = frozenset({bytes})
_first = itemgetter(0)
_second = itemgetter(1)

# zstandard's decompressor objects must not be used by two threads at once.
_zstd = threading.local()


def _decompressor() -> zstandard.ZstdDecompressor:
    try:
        return _zstd.decompressor
    except AttributeError:
        _zstd.decompressor = zstandard.ZstdDecompressor()
        return _zstd.decompressor


def inflate(section: memoryview, max_uncompressed_bytes: int) -> memoryview:
    """Decompress a zstd records section, refusing one that would inflate past the bound.

    A frame that declares its size is refused before any output is allocated; one that does
    not is decompressed with the bound as the output limit. Trailing bytes are refused.

    Raises:
        CorruptRecordsError: not one zstd frame, or larger than ``max_uncompressed_bytes``.
    """
    try:
        size = zstandard.frame_content_size(section)
        if size > max_uncompressed_bytes:
            raise CorruptRecordsError(f"records section inflates to {size} bytes, over the limit")
        data = _decompressor().decompress(
            section,
            max_output_size=max_uncompressed_bytes if size < 0 else 0,
            allow_extra_data=False,
        )
    except CorruptRecordsError:
        raise
    except Exception as exc:  # zstd's C code reports garbage in several ways
        raise CorruptRecordsError(f"records section does not decompress: {exc}") from None
    return memoryview(data)


def section_sizes(section, header) -> tuple[int, int, int]:
    """The section's (keys_bytes, values_bytes, headers_bytes), once they are shown to fit
    its length and the header (``check_section``'s scalar checks; ``decode_batches`` runs
    the column checks itself, over many batches at once)."""
    n = header.record_count
    fixed = SECTION_SIZES.size + 16 * n
    if len(section) < fixed:
        raise CorruptRecordsError(f"records section of {len(section)} bytes is too short for {n}")
    keys_bytes, values_bytes, headers_bytes = SECTION_SIZES.unpack_from(section, 0)
    if fixed + keys_bytes + values_bytes + headers_bytes != len(section):
        raise CorruptRecordsError("records section sizes disagree with the batch length")
    if bool(headers_bytes) != header.has_headers:
        raise CorruptRecordsError("headers blob size disagrees with the has-headers attribute")
    return keys_bytes, values_bytes, headers_bytes


def check_section(section: memoryview, header, *,
                  unpack_headers: bool = True) -> tuple[int, int, tuple | None]:
    """Raise CorruptRecordsError unless every record of ``section`` can be decoded.

    Args:
        section: the uncompressed records section, exactly as long as it claims to be
            (a 'B'-format memoryview or bytes).
        header: the batch's ``BatchHeader`` (record count, has-headers bit, CreateTimes).
        unpack_headers: False for a caller that only checks (the broker): a headers blob
            whose entries are all alike is then checked without unpacking each entry
            (``_uniform_headers.py``), and the headers returned are None.

    Returns:
        (keys_bytes, values_bytes, headers): the blob sizes, and the unpacked headers (one
        entry per record: None or a tuple of (str, bytes) tuples), or None when the batch
        has no headers blob. The decoder builds its columns from these without re-checking.
    """
    keys_bytes, values_bytes, headers_bytes = section_sizes(section, header)
    check_columns(section, header, keys_bytes, values_bytes)
    if not headers_bytes:
        return keys_bytes, values_bytes, None
    n = header.record_count
    fixed = SECTION_SIZES.size + 16 * n
    blob = section[fixed + keys_bytes + values_bytes:]
    if not unpack_headers and _alike_and_checked(blob, n):
        return keys_bytes, values_bytes, None
    return keys_bytes, values_bytes, unpack_header_blob(blob, n)


def _alike_and_checked(blob, n: int) -> bool:
    """True if every entry of ``blob`` has the first one's structure and that entry passes
    the full check (which raises if it does not); False: the caller unpacks them all."""
    first = all_like_the_first(blob, n)
    if first is None:
        return False
    unpack_header_blob(b"\x91" + first, 1)  # a one-entry blob: the first entry, fully checked
    return True


def unpack_header_blob(blob, n: int) -> tuple:
    """The headers blob as a tuple of n entries, each None or a tuple of (str, bytes)."""
    try:
        entries = msgpack.unpackb(blob, raw=False, use_list=False)
    except Exception as exc:  # msgpack reports garbage with many exception types
        raise CorruptRecordsError(f"headers blob is not msgpack: {exc}") from None
    if type(entries) is not tuple or len(entries) != n:
        raise CorruptRecordsError("headers blob is not a list of one entry per record")
    if not _ENTRY_TYPES.issuperset(map(type, entries)):
        raise CorruptRecordsError("a headers entry is neither nil nor a list")
    # The shape check runs in C (map, chain, set operations), never a Python loop per record.
    pairs = tuple(chain.from_iterable(filter(None, entries)))
    if pairs and not (
        _TUPLE.issuperset(map(type, pairs))
        and _PAIR_LENGTH.issuperset(map(len, pairs))
        and _STR.issuperset(map(type, map(_first, pairs)))
        and _BYTES.issuperset(map(type, map(_second, pairs)))
    ):
        raise CorruptRecordsError("a header is not a [str, bin] pair")
    return entries
