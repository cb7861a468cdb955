"""Keyed records land on the same partition on every machine, forever; null keys stick."""

import subprocess
import sys

from tslog.client._partitioner import StickyPartitioner, key_partition


def test_key_partition_is_pinned():
    # Frozen values: changing the hash would move every user's keys to other partitions.
    # crc32c(key) % partitions
    assert [key_partition(k, 12) for k in (b"", b"a", b"user-42", b"\x00" * 8)] == [0, 0, 2, 10]
    assert key_partition(b"user-42", 1000) == 790


def test_key_partition_is_the_same_in_another_process():
    keys = [b"k%d" % i for i in range(50)]
    here = [key_partition(k, 7) for k in keys]
    code = ("from tslog.client._partitioner import key_partition;"
            "print([key_partition(b'k%d' % i, 7) for i in range(50)])")
    there = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True, env={"PYTHONHASHSEED": "123"}).stdout
    assert eval(there) == here


def test_key_partition_spreads_keys():
    counts = [0] * 8
    for i in range(8000):
        counts[key_partition(b"key-%d" % i, 8)] += 1
    assert min(counts) > 800


def test_sticky_partitioner_sticks_until_the_batch_closes():
    sticky = StickyPartitioner(seed=1)
    first = sticky.partition("t", 4)
    assert all(sticky.partition("t", 4) == first for _ in range(100))
    sticky.batch_closed("t", first, 4)
    second = sticky.partition("t", 4)
    assert second != first and 0 <= second < 4
    sticky.batch_closed("t", first, 4)  # a stale notification changes nothing
    assert sticky.partition("t", 4) == second


def test_sticky_partitioner_single_partition():
    sticky = StickyPartitioner()
    assert sticky.partition("t", 1) == 0
    sticky.batch_closed("t", 0, 1)
    assert sticky.partition("t", 1) == 0
