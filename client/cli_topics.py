"""``tslog topics create|list|describe|alter-config|delete-records|delete``."""

from __future__ import annotations

import argparse
import contextlib

from . import Admin, cli_partitions
from .cli_common import UsageError, key_values, plural
from .errors import UnknownTopicOrPartitionError
from .times import parse_time_ms


def register(commands, common: argparse.ArgumentParser) -> None:
    """Add ``topics`` and its actions to the ``tslog`` parser's subcommands."""
    topics = commands.add_parser("topics", parents=[common],
                                 help="create, list, describe, alter-config, grow or delete topics")
    actions = topics.add_subparsers(metavar="ACTION")

    create = actions.add_parser("create", parents=[common], help="create a topic")
    create.add_argument("topic", help="the topic's name")
    create.add_argument("--partitions", type=int, default=1,
                        help="number of partitions (default: %(default)s)")
    create.add_argument("--replication-factor", type=int, default=1,
                        help="copies of each partition, on that many brokers "
                             "(default: %(default)s)")
    create.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                        help="topic config, e.g. retention.ms=86400000 (repeatable)")
    create.add_argument("--if-not-exists", action="store_true",
                        help="succeed, changing nothing, if the topic exists already")
    create.set_defaults(handler=_create)

    listing = actions.add_parser("list", parents=[common], help="list topics")
    listing.set_defaults(handler=_list)

    describe = actions.add_parser("describe", parents=[common],
                                  help="partitions (leader, replicas, ISR, epoch, offsets, "
                                       "records) and configs")
    describe.add_argument("topic", nargs="?", default=None,
                          help="the topic's name (default: every topic)")
    describe.set_defaults(handler=_describe)

    alter = actions.add_parser("alter-config", parents=[common],
                               help="set or reset a topic's configs")
    alter.add_argument("topic", help="the topic's name")
    alter.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                       help="set a config on the topic, e.g. retention.ms=3600000 (repeatable)")
    alter.add_argument("--delete-config", action="append", default=[], metavar="KEY",
                       help="return a config to its default (repeatable)")
    alter.set_defaults(handler=_alter_config)

    trim = actions.add_parser("delete-records", parents=[common],
                              help="delete a topic's oldest records (kafka-delete-records)")
    trim.add_argument("topic", help="the topic's name")
    before = trim.add_mutually_exclusive_group(required=True)
    before.add_argument("--before-offset", type=int, metavar="N",
                        help="delete every record before offset N (-1: all committed ones)")
    before.add_argument("--before-time", metavar="TIME",
                        help="delete every record appended before TIME, found through the "
                             "time index: ISO-8601, epoch ms, relative (-1d)")
    trim.add_argument("--partition", type=int, default=None,
                      help="only this partition (default: every partition)")
    trim.set_defaults(handler=_delete_records)

    delete = actions.add_parser("delete", parents=[common], help="delete a topic")
    delete.add_argument("topic", help="the topic's name")
    delete.set_defaults(handler=_delete)
    cli_partitions.register(actions, common)


def _create(args) -> None:
    configs = key_values(args.config, "--config")
    with Admin(args.bootstrap, security=args.security) as admin:
        created = admin.create_topic(args.topic, args.partitions, args.replication_factor,
                                     configs, exist_ok=args.if_not_exists)
    if created:
        print(f"created topic {args.topic} ({plural(args.partitions, 'partition')})")
    else:
        print(f"topic {args.topic} exists already; left as it is")


def _list(args) -> None:
    with Admin(args.bootstrap, security=args.security) as admin:
        for name in sorted(admin.list_topics()):
            print(name)


def _delete(args) -> None:
    with Admin(args.bootstrap, security=args.security) as admin, _named_if_missing(args.topic):
        admin.delete_topic(args.topic)
    print(f"deleted topic {args.topic}")


def _describe(args) -> None:
    """One topic, or with no name every topic (as kafka-topics --describe), one after the
    other. Each partition's records are its end offset minus its start offset (Redis's
    XLEN): what a consumer can read there now, after retention and deleted records."""
    with Admin(args.bootstrap, security=args.security) as admin:
        names = [args.topic] if args.topic is not None else sorted(admin.list_topics())
        for number, name in enumerate(names):
            if number:
                print()
            with _named_if_missing(name):
                _describe_one(admin, name)


def _describe_one(admin, name: str) -> None:
    description = admin.describe_topic(name)
    configs = admin.describe_configs(name)
    partitions = [(name, info.partition) for info in description.partitions]
    starts = admin.list_offsets({tp: -2 for tp in partitions})
    ends = admin.list_offsets({tp: -1 for tp in partitions})
    print(f"topic {description.name}: {plural(len(description.partitions), 'partition')}, "
          f"{plural(sum(_count(starts, ends, tp) for tp in partitions), 'record')}")
    print(f"{'partition':>9} {'leader':>6} {'epoch':>5}  replicas  isr       "
          f"{'start':>10} {'end':>10} {'records':>10}")
    for info, tp in zip(description.partitions, partitions):
        replicas = ",".join(map(str, info.replicas))
        isr = ",".join(map(str, info.isr))
        start, end = _offset(starts, tp), _offset(ends, tp)
        print(f"{info.partition:>9} {info.leader:>6} {info.leader_epoch:>5}  {replicas:<8}  "
              f"{isr:<8}  {start:>10} {end:>10} {_count(starts, ends, tp):>10}")
    print("configs (* set on this topic, others are the broker's defaults):")
    for key in sorted(configs):
        entry = configs[key]
        mark = "*" if entry.source == "topic" else " "
        print(f"  {mark} {entry.name}={entry.value}")


def _delete_records(args) -> None:
    """Move each partition's log start to the offset (or the first record at or after the
    time: every record before it goes; none that late means every record goes)."""
    with Admin(args.bootstrap, security=args.security) as admin, _named_if_missing(args.topic):
        numbers = [info.partition for info in admin.describe_topic(args.topic).partitions]
        if args.partition is not None:
            if args.partition not in numbers:
                raise UsageError(f"topic {args.topic} has no partition {args.partition}")
            numbers = [args.partition]
        partitions = [(args.topic, number) for number in numbers]
        starts = admin.list_offsets({tp: -2 for tp in partitions})
        if args.before_time is not None:
            moment = parse_time_ms(args.before_time)
            found = admin.list_offsets({tp: moment for tp in partitions})
            targets = {tp: found[tp].offset if found[tp] else -1 for tp in partitions}
        else:
            targets = {tp: args.before_offset for tp in partitions}
        lows = admin.delete_records(targets)
    for tp in partitions:
        before = _offset(starts, tp)
        gone = lows[tp] - before if isinstance(before, int) else 0
        print(f"{args.topic} partition {tp[1]}: log start {lows[tp]} "
              f"({plural(max(gone, 0), 'record')} deleted)")


def _offset(found: dict, tp) -> int | str:
    """An offset ListOffsets gave, "-" where the partition did not answer (no leader)."""
    entry = found.get(tp)
    return entry.offset if entry is not None else "-"


def _count(starts: dict, ends: dict, tp) -> int:
    start, end = _offset(starts, tp), _offset(ends, tp)
    return end - start if isinstance(start, int) and isinstance(end, int) else 0


def _alter_config(args) -> None:
    changes: dict[str, str | None] = dict(key_values(args.config, "--config"))
    for key in args.delete_config:
        if key in changes:
            raise UsageError(f"{key} is both set (--config) and deleted (--delete-config)")
        changes[key] = None
    if not changes:
        raise UsageError("alter-config needs --config KEY=VALUE or --delete-config KEY")
    with Admin(args.bootstrap, security=args.security) as admin, _named_if_missing(args.topic):
        admin.describe_topic(args.topic)  # a missing topic is named as such
        admin.alter_configs(args.topic, changes)
    done = [f"{key}={value}" if value is not None else f"{key} reset to default"
            for key, value in changes.items()]
    print(f"altered topic {args.topic}: {', '.join(done)}")


@contextlib.contextmanager
def _named_if_missing(topic: str):
    """The broker's "unknown topic or partition" (or the client's wording) as one message."""
    try:
        yield
    except UnknownTopicOrPartitionError:
        raise UnknownTopicOrPartitionError(f"topic {topic} does not exist") from None
