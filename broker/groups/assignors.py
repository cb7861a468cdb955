"""Server-side partition assignors: who should own which partition of a consumer group.

An assignor is a pure function ``(subscriptions, partition_counts, current) -> target``:

- ``subscriptions``: member id -> the topic names it subscribes to;
- ``partition_counts``: topic -> number of partitions (a topic missing or with 0 partitions
  does not exist and gets no owner);
- ``current``: member id -> the partitions it is meant to own now (the previous target);
- the result: every member id of ``subscriptions`` -> a frozenset of ``(topic, partition)``.

Every partition of a subscribed, existing topic gets exactly one owner among the members that
subscribe to its topic. The answer depends only on the arguments (members and topics are
walked in sorted order, never in dict or set order), so a coordinator rebuilt after a failover
computes the same target as the one it replaces.

Two assignors, as Kafka's consumer protocol offers:

- ``uniform`` (the default, Kafka's "uniform" server assignor): sticky and balanced. A
  partition stays with its current owner when that owner still subscribes to the topic and
  keeping it does not unbalance the group; the rest go to the least-loaded eligible member.
  Balanced means no partition could move from a member to one holding at least two fewer
  partitions that also subscribes to its topic; for members with the same subscriptions the
  counts therefore differ by at most one. Stickiness matters because every move costs a
  revocation round trip and re-reading the uncommitted tail.
- ``range`` (Kafka's RangeAssignor layout): per topic, the subscribed members sorted by id
  each take a contiguous range, the first ``partitions % members`` one extra. It ignores the
  current assignment: its point is a layout that co-partitioned topics share.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

Partition = tuple[str, int]
Assignment = dict[str, frozenset[Partition]]
Assignor = Callable[
    [Mapping[str, Iterable[str]], Mapping[str, int], Mapping[str, Iterable[Partition]]],
    Assignment,
]


def _live_subscriptions(subscriptions: Mapping[str, Iterable[str]],
                        partition_counts: Mapping[str, int]) -> dict[str, frozenset[str]]:
    """Each member's subscribed topics that exist (have at least one partition)."""
    return {member: frozenset(topic for topic in topics if partition_counts.get(topic, 0) > 0)
            for member, topics in subscriptions.items()}


def uniform_assign(subscriptions: Mapping[str, Iterable[str]],
                   partition_counts: Mapping[str, int],
                   current: Mapping[str, Iterable[Partition]]) -> Assignment:
    """The sticky, balanced target (see the module docstring)."""
    subscribed = _live_subscriptions(subscriptions, partition_counts)
    members = sorted(subscribed)
    owned: dict[str, set[Partition]] = {member: set() for member in members}
    taken: set[Partition] = set()
    for member in members:  # keep what is still valid, once, for the lowest member id
        for topic, partition in sorted(current.get(member, ())):
            tp = (topic, partition)
            if (topic in subscribed[member] and 0 <= partition < partition_counts[topic]
                    and tp not in taken):
                owned[member].add(tp)
                taken.add(tp)
    for topic in sorted(set().union(*subscribed.values())) if members else ():
        eligible = [member for member in members if topic in subscribed[member]]
        for partition in range(partition_counts[topic]):
            if (topic, partition) not in taken:
                receiver = min(eligible, key=lambda member: (len(owned[member]), member))
                owned[receiver].add((topic, partition))
    _balance(owned, subscribed, members)
    return {member: frozenset(owned[member]) for member in members}


def _balance(owned: dict[str, set[Partition]], subscribed: Mapping[str, frozenset[str]],
             members: list[str]) -> None:
    """Move partitions, one at a time, from heavier to lighter eligible members until no move
    is left that would narrow a gap of two or more.

    Each move lowers the sum of squared counts by at least 2, so the loop ends after at most
    as many moves as there are partitions.
    """
    while (move := _find_move(owned, subscribed, members)) is not None:
        giver, receiver, tp = move
        owned[giver].discard(tp)
        owned[receiver].add(tp)


def _find_move(owned: dict[str, set[Partition]], subscribed: Mapping[str, frozenset[str]],
               members: list[str]) -> tuple[str, str, Partition] | None:
    lightest_first = sorted(members, key=lambda member: (len(owned[member]), member))
    heaviest_first = sorted(members, key=lambda member: (-len(owned[member]), member))
    for receiver in lightest_first:
        for giver in heaviest_first:
            if len(owned[giver]) <= len(owned[receiver]) + 1:
                break
            movable = [tp for tp in owned[giver] if tp[0] in subscribed[receiver]]
            if movable:
                return giver, receiver, max(movable)
    return None


def range_assign(subscriptions: Mapping[str, Iterable[str]],
                 partition_counts: Mapping[str, int],
                 current: Mapping[str, Iterable[Partition]]) -> Assignment:
    """Kafka's per-topic range layout; ``current`` is accepted for the common signature only."""
    del current
    subscribed = _live_subscriptions(subscriptions, partition_counts)
    owned: dict[str, set[Partition]] = {member: set() for member in subscribed}
    for topic in sorted(set().union(*subscribed.values())) if subscribed else ():
        eligible = sorted(member for member in subscribed if topic in subscribed[member])
        per_member, extra = divmod(partition_counts[topic], len(eligible))
        for index, member in enumerate(eligible):
            start = index * per_member + min(index, extra)
            length = per_member + (1 if index < extra else 0)
            owned[member].update((topic, partition) for partition in range(start, start + length))
    return {member: frozenset(partitions) for member, partitions in sorted(owned.items())}


ASSIGNORS: dict[str, Assignor] = {"uniform": uniform_assign, "range": range_assign}
