import pytest

from tslog.client.times import TimeFormatError, format_time_ms, parse_time_ms

NOW = 1_795_300_000_000


@pytest.mark.parametrize(
    "text, expected",
    [
        ("1795300000000", 1_795_300_000_000),
        ("2026-11-21T10:00:00Z", 1_795_255_200_000),
        ("2026-11-21T11:00:00+01:00", 1_795_255_200_000),
        ("2026-11-21T10:00:00.250Z", 1_795_255_200_250),
        ("2026-11-21T10:00:00", 1_795_255_200_000),
        ("2026-11-21", 1_795_219_200_000),
        ("-15m", NOW - 900_000),
        ("-2h", NOW - 7_200_000),
        ("-1d", NOW - 86_400_000),
        ("+500ms", NOW + 500),
        ("now", NOW),
    ],
)
def test_accepted_forms(text, expected):
    assert parse_time_ms(text, now_ms=NOW) == expected


@pytest.mark.parametrize("text", ["", "yesterday", "-15x", "1700000000", "12:00", "2026-13-01"])
def test_refused_forms_say_what_is_accepted(text):
    with pytest.raises(TimeFormatError):
        parse_time_ms(text, now_ms=NOW)


def test_formatting_round_trips():
    assert format_time_ms(1_795_255_200_250) == "2026-11-21T10:00:00.250Z"
    assert parse_time_ms(format_time_ms(1_795_255_200_250)) == 1_795_255_200_250
    assert format_time_ms(-1) == "-"
