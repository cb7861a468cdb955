"""How much larger a record gets on the target, and the target topic limit that follows.

Why: the mirror adds its reserved headers to every record (``headers.py``), so a batch the
source accepted at exactly its ``max.message.bytes`` is larger on the target. Were the
target topic's limit the source's, the largest records the source accepted would be refused
as MESSAGE_TOO_LARGE for ever. So the mirror creates target topics with the source's limit
plus ``HEADROOM`` (the most the reserved headers can add to a batch of one record), and at
start it checks a target topic that exists already, refusing to copy only that topic (with
an error naming the setting and the value it needs) when its limit is too small.

The figures are measured from the encoded template the copy path uses (``sections.py``), so
they stay right if the reserved headers change.
"""

from __future__ import annotations

from .sections import reserved_entry_bytes

SETTING = "max.message.bytes"
# What the reserved headers add to one record: their msgpack entry, plus 2 bytes when a
# record's own headers push its header array from a fixarray to an array16.
PER_RECORD_BYTES = reserved_entry_bytes() + 2
# What they add to a batch of one record: that, plus the headers blob's own array header
# (at most 5 bytes; a source batch without headers has no blob at all).
HEADROOM = PER_RECORD_BYTES + 5


def source_limit(source_configs: dict) -> int:
    """The source topic's effective ``max.message.bytes`` (its override or the default)."""
    return int(source_configs[SETTING].value)


def target_limit(source_configs: dict) -> int:
    """The ``max.message.bytes`` the mirror gives a target topic it creates."""
    return source_limit(source_configs) + HEADROOM


def limit_problem(target_topic: str, source_configs: dict, target_configs: dict) -> str | None:
    """Why ``target_topic`` (existing) cannot take every record the source accepts, or None."""
    needed = target_limit(source_configs)
    have = int(target_configs[SETTING].value)
    if have >= needed:
        return None
    return (f"target topic {target_topic!r} has {SETTING}={have}, but the mirror needs at "
            f"least {needed} (the source's {SETTING}={source_limit(source_configs)} plus "
            f"{HEADROOM} bytes of reserved headers); raise it, e.g. `tslog topics "
            f"alter-config {target_topic} --config {SETTING}={needed}`; the other topics "
            f"keep copying and this one is checked again every checkpoint interval")
