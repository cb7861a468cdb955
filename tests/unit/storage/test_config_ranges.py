"""Every topic config has an inclusive range; a value outside it is refused (issue 20, item 6).

The ranges are ``RANGES`` and the table "Topic configs" in docs/protocol.md. A value is given
either as a Python int (TOML, the broker's ``[log]`` table) or as a decimal string (the wire,
``TSLOG_LOG_*``, a stored topic override); both paths are checked against the same bounds.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tslog.broker.storage.config import CHOICES, RANGES, ConfigError, LogConfig

KEYS = sorted(RANGES)


def test_every_key_has_a_range_and_the_defaults_are_inside_it():
    assert set(RANGES) | set(CHOICES) == set(LogConfig().to_mapping())
    assert not set(RANGES) & set(CHOICES)
    for key, value in LogConfig().to_mapping().items():
        if key in CHOICES:
            assert value in CHOICES[key], key
            continue
        low, high = RANGES[key]
        assert low <= value <= high, key


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize("as_text", [False, True])
def test_both_bounds_are_accepted_and_one_past_each_refused(key, as_text):
    low, high = RANGES[key]

    def given_as(value):
        return str(value) if as_text else value

    for inside in (low, high):
        assert LogConfig.from_mapping({key: given_as(inside)}).to_mapping()[key] == inside
    for outside in (low - 1, high + 1):
        with pytest.raises(ConfigError, match=f"{key} must be in \\[{low}, {high}\\]"):
            LogConfig.from_mapping({key: given_as(outside)})


@pytest.mark.parametrize("key", KEYS)
def test_a_huge_number_is_refused_quickly_and_the_message_stays_short(key):
    for text in ("9" * 100, "-" + "9" * 100, "1" + "0" * 5000, str(2**64)):
        with pytest.raises(ConfigError) as caught:
            LogConfig.from_mapping({key: text})
        assert len(str(caught.value)) < 200
    with pytest.raises(ConfigError):
        LogConfig.from_mapping({key: 10**100})  # an int, as TOML may give


def test_the_values_of_the_issue_are_refused():
    with pytest.raises(ConfigError, match="segment.index.bytes"):
        LogConfig.from_mapping({"segment.index.bytes": str(2**40)})
    with pytest.raises(ConfigError, match="retention.ms"):
        LogConfig.from_mapping({"retention.ms": "1" * 100})


@pytest.mark.parametrize("text", ["1e3", "1_000", "0x10", "１２", "", " ", "1.0", "--1", "12a"])
def test_only_decimal_integers_are_read(text):
    with pytest.raises(ConfigError, match="must be an integer"):
        LogConfig.from_mapping({"retention.ms": text})


def test_sign_and_surrounding_spaces_are_accepted():
    config = LogConfig.from_mapping({"retention.ms": " -1 ", "segment.ms": "+60000"})
    assert (config.retention_ms, config.segment_ms) == (-1, 60_000)


@pytest.mark.parametrize("value", [True, 1.5, None, [1], "٣"])
def test_non_integers_are_refused(value):
    with pytest.raises(ConfigError, match="must be an integer"):
        LogConfig.from_mapping({"flush.ms": value})


def test_every_problem_is_listed_at_once():
    with pytest.raises(ConfigError) as caught:
        LogConfig.from_mapping({"segment.index.bytes": 2**40, "retention.ms": "-2",
                                "flush.messages": 0})
    message = str(caught.value)
    assert all(key in message for key in ("segment.index.bytes", "retention.ms", "flush.messages"))


def test_the_constructor_checks_ranges_too():
    with pytest.raises(ConfigError, match="segment.index.bytes"):
        LogConfig(segment_index_bytes=2**40)
    with pytest.raises(ConfigError, match="segment.index.bytes"):
        dataclasses.replace(LogConfig(), segment_index_bytes=63)


@given(key=st.sampled_from(KEYS), value=st.integers(min_value=-(2**70), max_value=2**70),
       as_text=st.booleans())
def test_a_value_is_accepted_exactly_when_it_is_in_range(key, value, as_text):
    low, high = RANGES[key]
    try:
        config = LogConfig.from_mapping({key: str(value) if as_text else value})
    except ConfigError as exc:
        assert not low <= value <= high, exc
        assert key in str(exc) and len(str(exc)) < 200
    else:
        assert low <= value <= high
        assert config.to_mapping()[key] == value



def test_the_documented_table_matches_the_ranges():
    """docs/protocol.md lists every key with the same bounds."""
    from pathlib import Path
    text = (Path(__file__).parents[3] / "docs" / "protocol.md").read_text(encoding="utf-8")
    rows = {}
    for line in text.splitlines():
        cells = [cell.strip().strip("`") for cell in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and cells[0] in RANGES:
            rows[cells[0]] = (cells[1], cells[2])
    assert set(rows) == set(RANGES)
    for key, (low, high) in RANGES.items():
        assert rows[key] == (_documented(low), _documented(high)), key


def _documented(bound: int) -> str:
    names = {2**31 - 1: "2^31-1", 2**63 - 1: "2^63-1", 1 << 30: "2^30"}
    return names.get(bound, str(bound))


def test_a_choice_takes_only_its_words():
    config = LogConfig.from_mapping({"message.timestamp.type": "CreateTime"})
    assert config.message_timestamp_type == "CreateTime"
    assert LogConfig().message_timestamp_type == "LogAppendTime"
    for bad in ("createtime", "", 1, "LogAppendTime "):
        with pytest.raises(ConfigError, match="message.timestamp.type must be one of"):
            LogConfig.from_mapping({"message.timestamp.type": bad})
