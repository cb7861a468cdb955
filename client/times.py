"""Turning what people type for a time into epoch milliseconds.

One parser for the command line and the Spark reader, so "10:00 yesterday in ISO form",
"-15m" and "1763800000000" mean the same thing everywhere. Accepted forms:

- epoch milliseconds: ``1763800000000`` (a plain integer of 11 digits or more; smaller
  integers are refused rather than guessed as seconds)
- ISO-8601: ``2026-11-21T10:00:00Z``, ``2026-11-21T10:00:00.250+01:00``, ``2026-11-21``
  (a time without an offset is UTC; a date alone is its midnight UTC)
- relative to now: ``-15m``, ``-2h``, ``-1d``, ``-30s``, ``-500ms``, ``+1h``; and ``now``
"""

from __future__ import annotations

import re
import time
from datetime import datetime, timezone

_RELATIVE = re.compile(r"^([+-])(\d+)(ms|s|m|h|d|w)$")
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}
_MIN_EPOCH_MS_DIGITS = 11  # 1973-03-03 in ms; shorter integers are probably seconds


class TimeFormatError(ValueError):
    """The text is not a time tslog understands; the message says which forms it accepts."""


def parse_time_ms(text: str, now_ms: int | None = None) -> int:
    """Epoch milliseconds for ``text`` (see the module docstring for the accepted forms)."""
    value = text.strip()
    if now_ms is None:
        now_ms = time.time_ns() // 1_000_000
    if value.lower() == "now":
        return now_ms
    match = _RELATIVE.match(value)
    if match:
        sign, amount, unit = match.groups()
        delta = int(amount) * _UNIT_MS[unit]
        return now_ms + delta if sign == "+" else now_ms - delta
    if value.isdigit():
        if len(value) < _MIN_EPOCH_MS_DIGITS:
            raise TimeFormatError(
                f"{text!r} looks like epoch seconds or a small number; give epoch milliseconds "
                "(e.g. 1763800000000), ISO-8601 or a relative time like -15m"
            )
        return int(value)
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise TimeFormatError(
            f"cannot read {text!r} as a time: use ISO-8601 (2026-11-21T10:00:00Z), "
            "epoch milliseconds, or a relative time like -15m, -2h, -1d"
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return int(parsed.timestamp() * 1000)


def format_time_ms(timestamp_ms: int) -> str:
    """ISO-8601 UTC with milliseconds, for output meant for people."""
    if timestamp_ms < 0:
        return "-"
    moment = datetime.fromtimestamp(timestamp_ms / 1000, tz=timezone.utc)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
