"""``tslog groups``: consumer groups from the command line (kafka-consumer-groups' verbs).

    tslog groups list
    tslog groups describe [GROUP]               # per partition: committed, log end, lag
    tslog groups reset-offsets GROUP (--topic T | --all-topics) (--to-datetime TIME |
        --by-duration -3d | --to-earliest | --to-latest | --to-offset N | --shift-by N |
        --to-current) [--execute | --export]
    tslog groups reset-offsets GROUP --from-file plan.csv [--execute]   # what --export wrote
    tslog groups delete GROUP
    tslog groups translate GROUP --source A --target B [--execute]   # see cli_mirror.py

Why a module of its own: ``cli.py`` keeps topics, produce and consume; this one only
registers its commands there (``add_groups_commands``) and reads times with the same parser
(``times.parse_time_ms``), so ``--to-datetime`` takes every form ``consume --from-time`` does.

Lag in seconds is the age of the oldest record the group has not read: now (this machine's
clock) minus the LogAppendTime of the record at the committed offset, read with one small
fetch per lagging partition; 0 when the group is caught up. Offsets a reset would set are
clamped to [log start, log end], as Kafka does. A reset prints its plan and changes nothing
unless ``--execute`` is given; groups with live members are refused (their consumers would
overwrite the change).
"""

from __future__ import annotations

import json
import sys
import time

from . import Admin, Consumer, TopicPartition
from .cli_mirror import add_translate_command
from .errors import GroupIdNotFoundError
from .group_resets import at_keyword, at_moment, clamped, keyword, live_group_refusal
from .times import format_time_ms, parse_time_ms

# Options whose value may be a relative time such as -3d: ``cli.main`` glues them to their
# value before argparse sees them, as it does for --from-time.
TIME_OPTIONS = ("--to-datetime", "--by-duration")
_READ_TIMEOUT_S = 10.0
_POLL_MS = 200


class GroupsCommandError(ValueError):
    """A bad request on the command line: ``tslog`` prints it as one line and exits 1."""


def add_groups_commands(commands, common) -> None:
    """Add ``tslog groups ...`` to the ``tslog`` parser's subcommands."""
    groups = commands.add_parser("groups", help="list, describe, reset offsets of, delete "
                                                "consumer groups")
    actions = groups.add_subparsers(metavar="ACTION")
    listing = actions.add_parser("list", parents=[common], help="list consumer groups")
    listing.set_defaults(handler=_list)

    describe = actions.add_parser("describe", parents=[common],
                                  help="committed offsets, lag (records, seconds), members")
    describe.add_argument("group", nargs="?", default=None,
                          help="the consumer group's id (default: every group)")
    describe.add_argument("--format", choices=["text", "json"], default="text",
                          help="text tables or one JSON document (default: %(default)s)")
    describe.set_defaults(handler=_describe)

    reset = actions.add_parser("reset-offsets", parents=[common],
                               help="plan (default) or --execute a change of committed offsets")
    reset.add_argument("group", help="the consumer group's id")
    scope = reset.add_mutually_exclusive_group()
    scope.add_argument("--topic", help="the topic whose offsets change")
    scope.add_argument("--all-topics", action="store_true",
                       help="every topic the group has committed offsets on")
    reset.add_argument("--partition", type=int, default=None,
                       help="only this partition (default: every partition of the topic)")
    reset.add_argument("--export", action="store_true",
                       help="print the plan as Kafka's CSV (topic,partition,offset), which "
                            "--from-file takes back")
    target = reset.add_mutually_exclusive_group(required=True)
    target.add_argument("--to-datetime", metavar="TIME",
                        help="first record at or after TIME: ISO-8601, epoch ms, relative "
                             "(-15m), 'earliest' or 'latest' (the log end if none is that late)")
    target.add_argument("--by-duration", metavar="DURATION",
                        help="first record at or after now minus DURATION, e.g. -3d, -2h, -15m")
    target.add_argument("--to-earliest", action="store_true", help="the log start")
    target.add_argument("--to-latest", action="store_true", help="the log end")
    target.add_argument("--to-offset", type=int, metavar="N", help="offset N (clamped)")
    target.add_argument("--shift-by", type=int, metavar="N",
                        help="the committed offset plus N (negative: back; clamped)")
    target.add_argument("--to-current", action="store_true",
                        help="the committed offset as it is (clamped into the log)")
    target.add_argument("--from-file", metavar="FILE",
                        help="the offsets of a CSV file of topic,partition,offset lines "
                             "(what --export prints; its partitions are the scope)")
    reset.add_argument("--timestamp-type", choices=["append", "create"], default="append",
                       help="which time --to-datetime/--by-duration refer to "
                            "(default: LogAppendTime)")
    mode = reset.add_mutually_exclusive_group()
    mode.add_argument("--execute", action="store_true", help="commit the new offsets")
    mode.add_argument("--dry-run", action="store_true",
                      help="only print the plan (the default)")
    reset.add_argument("--format", choices=["text", "json"], default="text",
                       help="the plan as text or as JSON (default: %(default)s)")
    reset.set_defaults(handler=_reset_offsets, check=reset_scope_problem)

    delete = actions.add_parser("delete", parents=[common],
                                help="delete an empty group and its committed offsets")
    delete.add_argument("group", help="the consumer group's id")
    delete.set_defaults(handler=_delete)
    add_translate_command(actions, common)


# -- list and delete --------------------------------------------------------------------------

def _list(args) -> None:
    with Admin(args.bootstrap, security=args.security) as admin:
        for listing in admin.list_consumer_groups():
            print(f"{listing.group_id}\t{listing.state}\t{listing.members} members")


def _delete(args) -> None:
    with Admin(args.bootstrap, security=args.security) as admin:
        admin.delete_consumer_groups([args.group])
    print(f"deleted group {args.group}")


# -- reading the times of records -------------------------------------------------------------

def record_times(bootstrap: str, offsets: dict, security=None) -> dict:
    """{tp: (log_append_time, create_time)} of the first record at or after each offset.

    Give only offsets below the log end: a partition whose record cannot be read within
    ``_READ_TIMEOUT_S`` is left out. One consumer reads them all; a partition is dropped from
    its assignment once its record arrived, so a long lag costs one fetch, not a replay."""
    wanted = {TopicPartition(*tp): offset for tp, offset in offsets.items()}
    found: dict = {}
    if not wanted:
        return found
    with Consumer(bootstrap, security=security) as consumer:
        consumer.assign(list(wanted))
        for tp, offset in wanted.items():
            consumer.seek(tp, offset)
        deadline = time.monotonic() + _READ_TIMEOUT_S
        while len(found) < len(wanted) and time.monotonic() < deadline:
            for record in consumer.poll(_POLL_MS):
                tp = TopicPartition(record.topic, record.partition)
                if tp not in found and record.offset >= wanted[tp]:
                    found[tp] = (record.log_append_time, record.create_time)
            remaining = [tp for tp in wanted if tp not in found]
            if remaining and len(remaining) < len(consumer.assignment()):
                consumer.assign(remaining)
    return found


def _bounds(admin, partitions) -> dict:
    starts = admin.list_offsets({tp: -2 for tp in partitions})
    ends = admin.list_offsets({tp: -1 for tp in partitions})
    return {tp: (starts[tp].offset if starts[tp] else 0, ends[tp].offset if ends[tp] else 0)
            for tp in partitions}


def _seconds(ms: int | None) -> float | None:
    return None if ms is None else round(ms / 1000, 3)


def _shown(value) -> str:
    return "-" if value is None else str(value)


# -- describe ---------------------------------------------------------------------------------

def _describe(args) -> None:
    """One group, or with no name every group the coordinator lists (kafka-consumer-groups'
    ``--describe --all-groups``), one after the other."""
    if args.group is not None:
        _describe_one(args, args.group)
        return
    with Admin(args.bootstrap, security=args.security) as admin:
        names = sorted(listing.group_id for listing in admin.list_consumer_groups())
    for number, name in enumerate(names):
        if number and args.format == "text":
            print()
        _describe_one(args, name)


def _describe_one(args, group_id: str) -> None:
    with Admin(args.bootstrap, security=args.security) as admin:
        try:
            group = admin.describe_consumer_groups([group_id])[group_id]
        except GroupIdNotFoundError:
            group = None  # neither members' state nor offsets (brokers before this release
            # did not describe a group that only has offsets: OffsetFetch still tells)
        committed = admin.list_consumer_group_offsets(group_id)
        if group is None and not committed:
            raise GroupsCommandError(f"group {group_id!r} does not exist")
        owners = {tp: member.member_id for member in (group.members if group else ())
                  for tp in member.assigned}
        partitions = sorted(set(committed) | set(owners))
        bounds = _bounds(admin, partitions)
    behind = {tp: max(committed[tp].offset, bounds[tp][0]) for tp in partitions
              if tp in committed and committed[tp].offset < bounds[tp][1]}
    times = record_times(args.bootstrap, behind, args.security)
    now_ms = time.time_ns() // 1_000_000
    rows = []
    for tp in partitions:
        offset = committed[tp].offset if tp in committed else None
        end = bounds[tp][1]
        lag_ms = None  # unknown: nothing committed, or the unread record could not be read
        if tp in times:
            lag_ms = max(0, now_ms - times[tp][0])
        elif offset is not None and tp not in behind:
            lag_ms = 0  # caught up
        rows.append({"topic": tp.topic, "partition": tp.partition, "committed": offset,
                     "log_end": end, "lag": None if offset is None else max(0, end - offset),
                     "lag_seconds": _seconds(lag_ms), "member": owners.get(tp)})
    members = [{"member_id": m.member_id, "member_epoch": m.member_epoch, "state": m.state,
                "client_id": m.client_id, "host": m.client_host,
                "assigned": [list(tp) for tp in m.assigned]}
               for m in (group.members if group else ())]
    summary = {"group": group_id, "state": group.state if group else "EMPTY",
               "group_epoch": group.group_epoch if group else -1,
               "assignor": group.assignor if group else "-"}
    if args.format == "json":
        print(json.dumps({**summary, "partitions": rows, "members": members}))
        return
    print(f"group {summary['group']}: {summary['state']}, epoch {summary['group_epoch']}, "
          f"assignor {summary['assignor']}, {len(members)} members")
    print(f"{'TOPIC':<20} {'PARTITION':>9} {'COMMITTED':>10} {'LOG-END':>10} {'LAG':>8} "
          f"{'LAG-SECONDS':>12}  MEMBER")
    for row in rows:
        print(f"{row['topic']:<20} {row['partition']:>9} {_shown(row['committed']):>10} "
              f"{row['log_end']:>10} {_shown(row['lag']):>8} {_shown(row['lag_seconds']):>12}"
              f"  {_shown(row['member'])}")
    if members:
        _print_members(members)


def _print_members(members: list[dict]) -> None:
    """The members table: kafka-consumer-groups' ``--members`` columns (CONSUMER-ID, HOST,
    CLIENT-ID) beside tslog's epoch and state, so a member's process can be found."""
    print(f"{'MEMBER-ID':<24} {'HOST':<15} {'CLIENT-ID':<20} {'EPOCH':>6} {'STATE':<22} "
          f"PARTITIONS")
    for member in members:
        owned = ",".join(f"{t}-{p}" for t, p in member["assigned"]) or "-"
        print(f"{member['member_id']:<24} {member['host'] or '-':<15} "
              f"{member['client_id'] or '-':<20} {member['member_epoch']:>6} "
              f"{member['state']:<22} {owned}")


# -- reset-offsets ----------------------------------------------------------------------------

def _topic_partitions(admin, topic: str, partition: int | None) -> list[TopicPartition]:
    numbers = [info.partition for info in admin.describe_topic(topic).partitions]
    if partition is not None:
        if partition not in numbers:
            raise GroupsCommandError(f"topic {topic} has no partition {partition}")
        numbers = [partition]
    return [TopicPartition(topic, number) for number in numbers]


def _duration_time(text: str) -> str:
    """--by-duration's value as a relative time: ``-3d`` or ``3d`` (both mean 3 days ago)."""
    value = text.strip()
    if value.startswith("+"):
        raise GroupsCommandError(f"--by-duration goes back in time: give -{value[1:]}")
    return value if value.startswith("-") else "-" + value


def _by_time(admin, partitions, text: str, timestamp_type: str, bounds) -> dict:
    word = keyword(text)
    if word is not None:
        return at_keyword(word, partitions, bounds)
    moment = parse_time_ms(text)
    return at_moment(admin.list_offsets({tp: moment for tp in partitions}, timestamp_type),
                     bounds)


def _targets(args, admin, partitions, committed, bounds) -> dict:
    """The offset each partition would be set to, before clamping."""
    if args.to_datetime is not None:
        return _by_time(admin, partitions, args.to_datetime, args.timestamp_type, bounds)
    if args.by_duration is not None:
        return _by_time(admin, partitions, _duration_time(args.by_duration),
                        args.timestamp_type, bounds)
    if args.to_earliest:
        return at_keyword("earliest", partitions, bounds)
    if args.to_latest:
        return at_keyword("latest", partitions, bounds)
    if args.to_offset is not None:
        return {tp: args.to_offset for tp in partitions}
    if args.from_file is not None:
        return read_offsets_file(args.from_file)
    missing = [f"{tp.topic}-{tp.partition}" for tp in partitions if tp not in committed]
    if missing:
        raise GroupsCommandError(f"cannot shift {', '.join(missing)}: group {args.group!r} "
                                 "has no committed offset there")
    shift = 0 if args.to_current else args.shift_by
    return {tp: committed[tp].offset + shift for tp in partitions}


def read_offsets_file(path: str) -> dict:
    """{tp: offset} from Kafka's reset-offsets CSV (``topic,partition,offset`` lines, what
    ``--export`` prints); a line that is not that is an error naming the line."""
    offsets = {}
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            fields = line.strip().rsplit(",", 2)
            if len(fields) != 3 or not fields[1].isdigit() or not fields[2].lstrip("-").isdigit():
                raise GroupsCommandError(f"{path} line {number}: expected topic,partition,"
                                         f"offset, got {line.strip()!r}")
            offsets[TopicPartition(fields[0], int(fields[1]))] = int(fields[2])
    if not offsets:
        raise GroupsCommandError(f"{path} names no topic,partition,offset line")
    return offsets


def _scope(args, admin, committed) -> list[TopicPartition]:
    """The partitions a reset touches: the file's, every committed one, or the topic's."""
    if args.from_file is not None:
        return sorted(read_offsets_file(args.from_file))
    if args.all_topics:
        if not committed:
            raise GroupsCommandError(f"group {args.group!r} has no committed offsets")
        return sorted(tp for tp in committed
                      if args.partition is None or tp.partition == args.partition)
    return _topic_partitions(admin, args.topic, args.partition)


def _refuse_live_group(admin, group_id: str) -> None:
    try:
        group = admin.describe_consumer_groups([group_id])[group_id]
    except GroupIdNotFoundError:
        return
    refusal = live_group_refusal(group_id, group)
    if refusal is not None:
        raise refusal


def reset_scope_problem(args) -> str | None:
    """Why the command line names no partitions to reset (argparse's groups cannot say
    "one of --topic, --all-topics, or the target --from-file"); ``cli.main`` exits 2 on it."""
    if args.topic is None and not args.all_topics and args.from_file is None:
        return "reset-offsets needs --topic T, --all-topics or --from-file FILE"
    return None


def _reset_offsets(args) -> None:
    with Admin(args.bootstrap, security=args.security) as admin:
        _refuse_live_group(admin, args.group)
        committed = admin.list_consumer_group_offsets(args.group)
        partitions = _scope(args, admin, committed)
        bounds = _bounds(admin, partitions)
        targets = _targets(args, admin, partitions, committed, bounds)
        plan = clamped({tp: targets[tp] for tp in partitions}, bounds)
        times = record_times(args.bootstrap, {tp: offset for tp, offset in plan.items()
                                              if offset < bounds[tp][1]}, args.security)
        if args.execute:
            admin.alter_consumer_group_offsets(args.group, plan)
    rows = [{"topic": tp.topic, "partition": tp.partition,
             "current": committed[tp].offset if tp in committed else None,
             "new": offset,
             "log_append_time": times[tp][0] if tp in times else None,
             "create_time": times[tp][1] if tp in times else None}
            for tp, offset in plan.items()]
    if args.export:
        for row in rows:
            print(f"{row['topic']},{row['partition']},{row['new']}")
    elif args.format == "json":
        for row in rows:
            print(json.dumps(row))
    else:
        print(f"{'TOPIC':<20} {'PARTITION':>9} {'CURRENT':>10} -> {'NEW':<10} "
              "NEW-OFFSET-LOG-APPEND-TIME")
        for row in rows:
            moment = format_time_ms(row["log_append_time"]) if row["log_append_time"] else "-"
            print(f"{row['topic']:<20} {row['partition']:>9} {_shown(row['current']):>10} -> "
                  f"{row['new']:<10} {moment}")
    if args.execute:
        print(f"group {args.group}: {len(rows)} offsets reset", file=sys.stderr)
    else:
        print("dry run: nothing changed (add --execute to commit these offsets)",
              file=sys.stderr)
