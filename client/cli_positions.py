"""Where ``consume`` (alone or in a group) starts and stops reading: a time, or a keyword,
turned into positions through the consumer's time lookups."""

from __future__ import annotations

from .times import parse_time_ms


def resolve_start(consumer, partitions, text: str, timestamp_type: str) -> None:
    keyword = text.strip().lower()
    if keyword == "earliest":
        consumer.seek_to_beginning(*partitions)
    elif keyword == "latest":
        consumer.seek_to_end(*partitions)
    else:
        consumer.seek_to_timestamp(parse_time_ms(text), timestamp_type, partitions)


def end_offsets(consumer, partitions, text: str, timestamp_type: str) -> dict:
    """Per partition, the offset to stop before: the first record at or after the end time,
    or, where none exists yet, the log end as of now."""
    end_ms = parse_time_ms(text)
    found = consumer.offsets_for_times({tp: end_ms for tp in partitions}, timestamp_type)
    latest = consumer.end_offsets([tp for tp, value in found.items() if value is None])
    return {tp: (value.offset if value is not None else latest[tp]) for tp, value in found.items()}
