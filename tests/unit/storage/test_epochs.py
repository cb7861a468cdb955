"""Leader-epoch checkpoint: the answers OffsetForLeaderEpoch gives and the file that keeps them."""

import pytest

from tslog.broker.storage.epochs import UNDEFINED, LeaderEpochCache


def test_end_offset_of_an_epoch_is_where_the_next_known_epoch_starts(tmp_path):
    cache = LeaderEpochCache(tmp_path)
    cache.assign(1, 0)
    cache.assign(3, 100)
    cache.assign(4, 250)
    assert cache.end_offset_for(1, 300) == (1, 100)
    assert cache.end_offset_for(2, 300) == (1, 100)  # never led: the largest epoch below it
    assert cache.end_offset_for(3, 300) == (3, 250)
    assert cache.end_offset_for(4, 300) == (4, 300)  # the latest ends at the log end
    assert cache.end_offset_for(9, 300) == (4, 300)
    assert cache.end_offset_for(0, 300) == (UNDEFINED, UNDEFINED)


def test_an_empty_cache_knows_no_epoch(tmp_path):
    cache = LeaderEpochCache(tmp_path)
    assert cache.latest_epoch == UNDEFINED
    assert cache.end_offset_for(5, 10) == (UNDEFINED, UNDEFINED)


def test_older_or_equal_epochs_are_not_recorded_again(tmp_path):
    cache = LeaderEpochCache(tmp_path)
    assert cache.assign(2, 10)
    assert not cache.assign(2, 20)
    assert not cache.assign(1, 30)
    assert cache.entries == [(2, 10)]


def test_a_newer_epoch_starting_earlier_ends_the_older_ones(tmp_path):
    cache = LeaderEpochCache(tmp_path)
    cache.assign(1, 0)
    cache.assign(2, 50)
    cache.assign(3, 40)  # epoch 2 never held data below 50: it is gone
    assert cache.entries == [(1, 0), (3, 40)]


def test_entries_survive_a_reopen_and_follow_truncation(tmp_path):
    cache = LeaderEpochCache(tmp_path)
    cache.assign(1, 0)
    cache.assign(2, 100)
    cache.assign(5, 180)
    cache.truncate_from_end(150)
    assert LeaderEpochCache(tmp_path).entries == [(1, 0), (2, 100)]
    cache.truncate_from_start(120)
    assert LeaderEpochCache(tmp_path).entries == [(2, 120)]


def test_a_torn_checkpoint_is_refused_not_misread(tmp_path):
    (tmp_path / "leader-epoch-checkpoint").write_text("0\n3\n1 0\n2 5\n")
    with pytest.raises(ValueError, match="torn"):
        LeaderEpochCache(tmp_path)
