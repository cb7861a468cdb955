"""The broker's shortcut for headers blobs whose entries are all alike (``_uniform_headers``)
accepts and refuses exactly what unpacking every entry does.

Method: differential. Sections whose headers are alike on every record (the mirror's
reserved headers, a producer tagging every record the same, all nil) and sections whose
headers are not, each also with thousands of seeded random corruptions of its headers blob
(a byte changed, a byte dropped), are checked both ways: ``check_section`` with
``unpack_headers=False`` (the broker's) must raise exactly when the full unpack does. A
count, not a time, says that the shortcut is taken: the alike blob is never unpacked whole.
"""

from __future__ import annotations

import random

import msgpack
import pytest

from tslog.protocol import _record_check
from tslog.protocol.batch_header import HEADER_SIZE, parse_header
from tslog.protocol.records import CorruptRecordsError, SECTION_SIZES, build_batch


def _mirror_like(n: int) -> list:
    return [[("tslog.mirror.partition", (3).to_bytes(4, "big")),
             ("tslog.mirror.offset", i.to_bytes(8, "big")),
             ("tslog.mirror.lat", (1_700_000_000_000 + i // 10).to_bytes(8, "big"))]
            for i in range(n)]


SHAPES = {
    "mirror-like": _mirror_like(200),
    "one tag on every record": [[("source", b"sensor-7")]] * 100,
    "every record nil but one": [None] * 99 + [[("a", b"b")]],
    "values of different lengths": [[("k", b"x" * (i % 3))] for i in range(100)],
    "long names and values": [[("n" * 300, b"v" * 70_000)]] * 9,
    "few records": [[("a", b"1")]] * 3,
}


def _section(headers) -> tuple[bytes, object, int]:
    """(section, header, where its headers blob starts) of a batch with these headers."""
    batch = build_batch([b"v"] * len(headers), headers=headers)
    section = batch[HEADER_SIZE:]
    keys, values, _ = SECTION_SIZES.unpack_from(section, 0)
    return section, parse_header(batch[:HEADER_SIZE]), (SECTION_SIZES.size + 16 * len(headers)
                                                        + keys + values)


def _outcome(section, header, unpack_headers: bool) -> str:
    try:
        _record_check.check_section(memoryview(section), header, unpack_headers=unpack_headers)
    except CorruptRecordsError:
        return "refused"
    return "accepted"


def _with_blob(section: bytes, start: int, blob: bytes) -> bytes:
    keys, values, _ = SECTION_SIZES.unpack_from(section, 0)
    return SECTION_SIZES.pack(keys, values, len(blob)) + section[SECTION_SIZES.size:start] + blob


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_the_shortcut_agrees_with_unpacking_on_every_corruption(shape):
    section, header, start = _section(SHAPES[shape])
    assert _outcome(section, header, False) == _outcome(section, header, True) == "accepted"
    rng = random.Random(shape)
    blob = section[start:]
    for _ in range(1500):
        mutated = bytearray(blob)
        at = rng.randrange(len(mutated))
        if rng.random() < 0.8:
            mutated[at] = rng.choice((rng.randrange(256), 0xC0, 0x92, 0xA1, 0xC4, 0x90 | 3))
        else:
            del mutated[at]
        changed = _with_blob(section, start, bytes(mutated))
        assert _outcome(changed, header, False) == _outcome(changed, header, True), (at,)


def test_a_blob_of_alike_entries_is_not_unpacked_whole(monkeypatch):
    """Counted: for the mirror's shape only the first entry goes through msgpack."""
    unpacked = []
    real = msgpack.unpackb
    monkeypatch.setattr(_record_check.msgpack, "unpackb",
                        lambda blob, **kw: unpacked.append(len(blob)) or real(blob, **kw))
    section, header, start = _section(_mirror_like(4000))
    _record_check.check_section(memoryview(section), header, unpack_headers=False)
    assert len(unpacked) == 1 and unpacked[0] < 200
    unpacked.clear()
    _record_check.check_section(memoryview(section), header)  # the decoder's: all of it
    assert unpacked == [len(section) - start]
