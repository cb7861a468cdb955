"""The rules of a consumer group's offset reset, for every tool that resets: ``tslog groups
reset-offsets`` (sync, ``cli_groups.py``) and the web console's reset to a moment (async,
``console/groups.py``).

Why a module of its own: the rules must be one set, not two that a test compares; and they
are pure (the callers ask the cluster, sync or async, and hand the answers in), so they live
apart from either tool's I/O. Kafka's ``kafka-consumer-groups --reset-offsets`` rules:

- a group with live members is refused (their consumers would overwrite the change);
- ``earliest`` and ``latest`` are each partition's log start and log end;
- a moment goes to the first offset at or after it (a time-index lookup), or to the log end
  where no record is that late;
- every target is clamped to [log start, log end].
"""

from __future__ import annotations

from .errors import NonEmptyGroupError

KEYWORDS = ("earliest", "latest")


def live_group_refusal(group_id: str, group) -> NonEmptyGroupError | None:
    """The error to raise when ``group`` (a GroupDescription, or None for a group without
    members' state) has live members; None when a reset may go ahead."""
    if group is None or not group.members:
        return None
    return NonEmptyGroupError(
        f"group {group_id!r} has {len(group.members)} live members (state {group.state}): "
        "stop its consumers (or wait until their session times out) before resetting "
        "its offsets")


def keyword(moment: str) -> str | None:
    """``"earliest"`` or ``"latest"`` if ``moment`` is one of them (any case, spaces)."""
    word = moment.strip().lower()
    return word if word in KEYWORDS else None


def at_keyword(word: str, partitions, bounds: dict) -> dict:
    """{tp: log start} for earliest, {tp: log end} for latest; ``bounds``: {tp: (start, end)}."""
    return {tp: bounds[tp][word == "latest"] for tp in partitions}


def at_moment(found: dict, bounds: dict) -> dict:
    """{tp: the offset a lookup found, or the log end where it found none (None)}."""
    return {tp: answer.offset if answer is not None else bounds[tp][1]
            for tp, answer in found.items()}


def clamped(targets: dict, bounds: dict) -> dict:
    """Each target within its partition's [log start, log end]."""
    return {tp: min(max(target, bounds[tp][0]), bounds[tp][1])
            for tp, target in targets.items()}
