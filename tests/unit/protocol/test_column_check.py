"""The small-batch column check, guarded by counting rather than timing: a batch of up to
``SCALAR_MAX_RECORDS`` records is validated without one numpy call, and the Python work of
validating it does not grow with its record count (issue 37, small batches).

That both paths accept and refuse the same batches: tests/property/test_column_check.py.
"""

from __future__ import annotations

import struct
from collections import Counter

import pytest

from tests.helpers.batches import reseal
from tests.helpers.python_calls import calls_by_name
from tslog.protocol import _column_check
from tslog.protocol._column_check import COLUMNS_START, SCALAR_MAX_RECORDS
from tslog.protocol._record_check import SECTION_SIZES
from tslog.protocol.batch_header import (
    HEADER_SIZE,
    validate_batch,
    validate_batch_for_stamping,
)
from tslog.protocol.errors import CorruptRecordsError
from tslog.protocol.records import build_batch

VALUE = b"v" * 100


class NumpyCalled(AssertionError):
    pass


class NoNumpy:
    """Stands in for the numpy module: any use of it fails the test."""

    def __getattr__(self, name):
        raise NumpyCalled(f"numpy.{name} used")


def batch_of(records: int, **kwargs) -> bytes:
    kwargs.setdefault("create_times", [1_700_000_000_000 + i % 7 for i in range(records)])
    return build_batch([VALUE] * records, keys=[None] + [b"k"] * (records - 1), **kwargs)


def test_the_columns_follow_the_three_section_sizes():
    assert COLUMNS_START == SECTION_SIZES.size


@pytest.mark.parametrize("records", [1, 2, SCALAR_MAX_RECORDS])
def test_a_small_batch_is_validated_without_numpy(monkeypatch, records):
    monkeypatch.setattr(_column_check, "np", NoNumpy())
    assert validate_batch(batch_of(records)).record_count == records
    headers = [[("h", b"1")]] + [None] * (records - 1)
    assert validate_batch(batch_of(records, headers=headers)).record_count == records


def test_a_small_batch_is_refused_without_numpy(monkeypatch):
    monkeypatch.setattr(_column_check, "np", NoNumpy())
    batch = bytearray(batch_of(1))
    with pytest.raises(CorruptRecordsError, match="create times disagree"):
        validate_batch(_with_create_time(batch, 5))


def test_a_batch_past_the_threshold_takes_the_numpy_path(monkeypatch):
    """The stand-in is seen when numpy is used, so the tests above prove something."""
    monkeypatch.setattr(_column_check, "np", NoNumpy())
    with pytest.raises(NumpyCalled):
        validate_batch(batch_of(SCALAR_MAX_RECORDS + 1))


def calls_made(function, *args) -> Counter:
    """Python-level and C-level calls made by ``function(*args)``, by kind."""
    return calls_by_name(lambda: function(*args))[0]


def test_validating_a_small_batch_makes_a_bounded_number_of_calls_whatever_its_count():
    """The same Python and C calls for 2 records as for ``SCALAR_MAX_RECORDS``: no Python
    loop and no call per record, only C-level work inside the calls. The bound is today's
    count with a little room; a validation that grows past it has gained a call per batch
    that a small append pays in full. A plain one-record batch takes the one-record path
    (``_one_record.py``): fewer calls still, a handful whatever its sizes."""
    two = calls_made(validate_batch_for_stamping, batch_of(2))
    most = calls_made(validate_batch_for_stamping, batch_of(SCALAR_MAX_RECORDS))
    assert two == most
    assert two["python"] <= 16, two
    one = calls_made(validate_batch_for_stamping, batch_of(1))
    assert one["python"] <= 2 and one["c"] <= 6, one


def _with_create_time(batch: bytearray, delta: int) -> bytes:
    """``batch`` with its first record's CreateTime moved by ``delta``, CRC resealed."""
    position = HEADER_SIZE + COLUMNS_START
    old = struct.unpack_from("<q", batch, position)[0]
    struct.pack_into("<q", batch, position, old + delta)
    return reseal(batch)
