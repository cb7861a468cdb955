"""``tslog``: the command line for topics, producing lines and replaying a time range.

    tslog topics create|list|describe|delete|add-partitions ...
    tslog produce TOPIC                       # one record per stdin line
    tslog consume TOPIC --from-time -1h [--to-time now] [--format json]
    tslog consume TOPIC --group G             # share the partitions, resume where G committed
    tslog offsets TOPIC --time 2026-11-21T10:00:00Z
    tslog groups list|describe|reset-offsets|delete ...   # see cli_groups.py

Every subcommand takes ``--bootstrap`` (default ``$TSLOG_BOOTSTRAP`` or 127.0.0.1:9092).
Errors print one line on stderr and exit 1 (2 for a bad command line).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import sys

from . import Admin, Consumer, ConsumerRebalanceListener, Producer, TopicPartition
from . import cli_partitions
from .cli_groups import TIME_OPTIONS as _GROUP_TIME_OPTIONS, add_groups_commands
from .errors import TslogError
from .times import TimeFormatError, format_time_ms, parse_time_ms

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"
_POLL_MS = 200


class CommandError(Exception):
    """A user-facing failure: printed as one line, exit status 1."""


_TIME_OPTIONS = ("--from-time", "--to-time", "--time") + _GROUP_TIME_OPTIONS


def _attach_time_values(argv: list[str]) -> list[str]:
    """Turn ``--from-time -1h`` into ``--from-time=-1h``: argparse would read a relative time
    as an unknown option, and ``-15m`` is the form people type most."""
    joined: list[str] = []
    items = iter(argv)
    for item in items:
        if item in _TIME_OPTIONS:
            value = next(items, None)
            joined.append(item if value is None else f"{item}={value}")
        else:
            joined.append(item)
    return joined


def main(argv: list[str] | None = None) -> int:
    parser = _build_parser()
    args = parser.parse_args(_attach_time_values(sys.argv[1:] if argv is None else argv))
    if not getattr(args, "handler", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        return args.handler(args) or 0
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # e.g. `tslog consume ... | head`
        sys.stderr.close()
        return 0
    except (CommandError, TslogError, TimeFormatError, OSError, ValueError) as error:
        message = str(error) or type(error).__name__
        print(f"tslog: error: {message}", file=sys.stderr)
        return 1


def _build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--bootstrap",
        default=os.environ.get("TSLOG_BOOTSTRAP", DEFAULT_BOOTSTRAP),
        help="broker address host:port[,host:port] (default: $TSLOG_BOOTSTRAP or %(default)s)",
    )
    parser = argparse.ArgumentParser(prog="tslog", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(metavar="COMMAND")

    topics = commands.add_parser("topics", help="create, list, describe, delete or grow topics")
    topic_commands = topics.add_subparsers(metavar="ACTION")
    create = topic_commands.add_parser("create", parents=[common], help="create a topic")
    create.add_argument("topic")
    create.add_argument("--partitions", type=int, default=1)
    create.add_argument("--replication-factor", type=int, default=1)
    create.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                        help="topic config, e.g. retention.ms=86400000 (repeatable)")
    create.set_defaults(handler=_topics_create)
    listing = topic_commands.add_parser("list", parents=[common], help="list topics")
    listing.set_defaults(handler=_topics_list)
    describe = topic_commands.add_parser("describe", parents=[common],
                                         help="partitions (leader, replicas, ISR, epoch) and configs")
    describe.add_argument("topic")
    describe.set_defaults(handler=_topics_describe)
    delete = topic_commands.add_parser("delete", parents=[common], help="delete a topic")
    delete.add_argument("topic")
    delete.set_defaults(handler=_topics_delete)
    cli_partitions.register(topic_commands, common)

    produce = commands.add_parser("produce", parents=[common],
                                  help="send each line of stdin as one record")
    produce.add_argument("topic")
    produce.add_argument("--key-separator", default=None,
                         help="split each line at the first SEP into key and value")
    produce.add_argument("--partition", type=int, default=None)
    produce.add_argument("--acks", choices=["0", "1", "all"], default="all")
    produce.set_defaults(handler=_produce)

    consume = commands.add_parser("consume", parents=[common],
                                  help="print records from a point in time")
    consume.add_argument("topic")
    consume.add_argument("--from-time", default=None,
                         help="ISO-8601, epoch ms, relative (-15m), 'earliest' (default) or "
                              "'latest'; with --group, overrides the committed positions")
    consume.add_argument("--to-time", default=None,
                         help="stop before the first record at or after this time")
    consume.add_argument("--timestamp-type", choices=["append", "create"], default="append",
                         help="which time --from-time/--to-time refer to (default: LogAppendTime)")
    consume.add_argument("--partition", type=int, default=None)
    consume.add_argument("--max-messages", type=int, default=None)
    consume.add_argument("--format", choices=["text", "json"], default="text")
    consume.add_argument("--group", default=None,
                         help="join this consumer group: read its share of the partitions, "
                              "from its committed offsets (else the earliest), committing")
    consume.set_defaults(handler=_consume)

    offsets = commands.add_parser("offsets", parents=[common],
                                  help="the offset each partition holds for a time")
    offsets.add_argument("topic")
    offsets.add_argument("--time", required=True,
                         help="ISO-8601, epoch ms, relative (-15m), 'earliest' or 'latest'")
    offsets.add_argument("--timestamp-type", choices=["append", "create"], default="append")
    offsets.add_argument("--format", choices=["text", "json"], default="text")
    offsets.set_defaults(handler=_offsets)
    add_groups_commands(commands, common)
    return parser


# -- topics -----------------------------------------------------------------------------------

def _topics_create(args) -> None:
    configs = {}
    for item in args.config:
        key, equals, value = item.partition("=")
        if not equals or not key:
            raise CommandError(f"--config takes KEY=VALUE, not {item!r}")
        configs[key] = value
    with Admin(args.bootstrap) as admin:
        admin.create_topic(args.topic, args.partitions, args.replication_factor, configs)
    print(f"created topic {args.topic} ({args.partitions} partitions)")


def _topics_list(args) -> None:
    with Admin(args.bootstrap) as admin:
        for name in sorted(admin.list_topics()):
            print(name)


def _topics_delete(args) -> None:
    with Admin(args.bootstrap) as admin:
        admin.delete_topic(args.topic)
    print(f"deleted topic {args.topic}")


def _topics_describe(args) -> None:
    with Admin(args.bootstrap) as admin:
        description = admin.describe_topic(args.topic)
        configs = admin.describe_configs(args.topic)
    print(f"topic {description.name}: {len(description.partitions)} partitions")
    print(f"{'partition':>9} {'leader':>6} {'epoch':>5}  replicas  isr")
    for info in description.partitions:
        replicas = ",".join(map(str, info.replicas))
        isr = ",".join(map(str, info.isr))
        print(f"{info.partition:>9} {info.leader:>6} {info.leader_epoch:>5}  {replicas:<8}  {isr}")
    overrides = [entry for entry in configs.values() if entry.source == "topic"]
    if overrides:
        print("configs: " + ", ".join(f"{entry.name}={entry.value}" for entry in overrides))


# -- produce ----------------------------------------------------------------------------------

def _produce(args) -> None:
    acks = "all" if args.acks == "all" else int(args.acks)
    separator = args.key_separator.encode() if args.key_separator else None
    count = 0
    with Producer(args.bootstrap, acks=acks) as producer:
        futures = []
        for line in sys.stdin.buffer:
            value = line.rstrip(b"\r\n")
            key = None
            if separator is not None and separator in value:
                key, value = value.split(separator, 1)
            futures.append(producer.send(args.topic, value, key=key, partition=args.partition))
            count += 1
            if len(futures) >= 10_000:
                _wait_all(futures)
        producer.flush()
        _wait_all(futures)
    print(f"produced {count} records to {args.topic}", file=sys.stderr)


def _wait_all(futures: list) -> None:
    for future in futures:
        future.get(60)
    futures.clear()


# -- consume and offsets ----------------------------------------------------------------------

def _resolve_start(consumer, partitions, text: str, timestamp_type: str) -> None:
    keyword = text.strip().lower()
    if keyword == "earliest":
        consumer.seek_to_beginning(*partitions)
    elif keyword == "latest":
        consumer.seek_to_end(*partitions)
    else:
        consumer.seek_to_timestamp(parse_time_ms(text), timestamp_type, partitions)


def _end_offsets(consumer, partitions, text: str, timestamp_type: str) -> dict:
    """Per partition, the offset to stop before: the first record at or after the end time,
    or, where none exists yet, the log end as of now."""
    end_ms = parse_time_ms(text)
    found = consumer.offsets_for_times({tp: end_ms for tp in partitions}, timestamp_type)
    latest = consumer.end_offsets([tp for tp, value in found.items() if value is None])
    return {tp: (value.offset if value is not None else latest[tp]) for tp, value in found.items()}


def _consume(args) -> None:
    if args.group is not None:
        _consume_group(args)
        return
    with Consumer(args.bootstrap) as consumer:
        partitions = _partitions(args.bootstrap, args.topic, args.partition)
        consumer.assign(partitions)
        _resolve_start(consumer, partitions, args.from_time or "earliest", args.timestamp_type)
        ends = _end_offsets(consumer, partitions, args.to_time, args.timestamp_type) if args.to_time else None
        remaining = args.max_messages
        done = set()
        write = sys.stdout.write
        while remaining is None or remaining > 0:
            if ends is not None:
                done |= {tp for tp in partitions if consumer.position(tp) >= ends[tp]}
                if len(done) == len(partitions):
                    break
            for record in consumer.poll(_POLL_MS):
                tp = TopicPartition(record.topic, record.partition)
                if ends is not None and record.offset >= ends[tp]:
                    continue
                write(_render(record, args.format))
                if remaining is not None:
                    remaining -= 1
                    if remaining == 0:
                        break
            sys.stdout.flush()


class _GroupProgress(ConsumerRebalanceListener):
    """``consume --group``'s bookkeeping: where partitions it gets start (``--from-time``, the
    first time this process gets each) and end (``--to-time``), and the offset after the last
    record printed, which is what it commits: a record is committed only once printed."""

    def __init__(self, consumer, args) -> None:
        self.consumer, self.args = consumer, args
        self.printed: dict[TopicPartition, int] = {}
        self.committed: dict[TopicPartition, int] = {}
        self.ends: dict[TopicPartition, int] = {}
        self.seen: set[TopicPartition] = set()

    def on_partitions_assigned(self, assigned) -> None:
        new = sorted(tp for tp in assigned if tp not in self.seen)
        self.seen.update(new)
        if new and self.args.from_time is not None:
            _resolve_start(self.consumer, new, self.args.from_time, self.args.timestamp_type)
        if new and self.args.to_time:
            self.ends.update(_end_offsets(self.consumer, new, self.args.to_time,
                                          self.args.timestamp_type))

    def on_partitions_revoked(self, revoked) -> None:
        self.commit(revoked)

    def on_partitions_lost(self, lost) -> None:
        self._forget(lost)  # another member reads them from the last accepted commit

    def commit(self, partitions=None) -> None:
        """Commit what was printed since the last commit (of ``partitions``, or all)."""
        offsets = {tp: offset for tp, offset in self.printed.items()
                   if (partitions is None or tp in partitions)
                   and self.committed.get(tp) != offset}
        if offsets:
            try:
                self.consumer.commit(offsets)
                self.committed.update(offsets)
            except TslogError as error:  # moved on: the next reader starts at the last commit
                print(f"tslog: warning: commit failed: {error}", file=sys.stderr)
        if partitions is not None:
            self._forget(partitions)

    def _forget(self, partitions) -> None:
        for tp in partitions:
            self.printed.pop(tp, None)
            self.committed.pop(tp, None)

    def finished(self) -> bool:
        """With --to-time: every partition held is at its end."""
        held = self.consumer.assignment()
        return bool(held) and all(tp in self.ends and self.consumer.position(tp) >= self.ends[tp]
                                  for tp in held)


def _consume_group(args) -> None:
    """Read a share of the topic as a member of ``--group``, committing after every batch
    printed and on the way out (Ctrl-C included)."""
    if args.partition is not None:
        raise CommandError("--partition and --group exclude each other: the group assigns")
    _partitions(args.bootstrap, args.topic, None)  # an unknown topic is an error, not a wait
    with Consumer(args.bootstrap, group_id=args.group, auto_offset_reset="earliest",
                  enable_auto_commit=False) as consumer:
        progress = _GroupProgress(consumer, args)
        consumer.subscribe([args.topic], listener=progress)
        remaining = args.max_messages
        write = sys.stdout.write
        try:
            while (remaining is None or remaining > 0) and not (args.to_time and
                                                               progress.finished()):
                for record in consumer.poll(_POLL_MS):
                    tp = TopicPartition(record.topic, record.partition)
                    if tp in progress.ends and record.offset >= progress.ends[tp]:
                        continue
                    write(_render(record, args.format))
                    progress.printed[tp] = record.offset + 1
                    if remaining is not None:
                        remaining -= 1
                        if remaining == 0:
                            break
                sys.stdout.flush()
                progress.commit()
        finally:
            progress.commit()


def _partitions(bootstrap: str, topic: str, partition: int | None) -> list[TopicPartition]:
    with Admin(bootstrap) as admin:
        description = admin.describe_topic(topic)
    numbers = [info.partition for info in description.partitions]
    if partition is not None:
        if partition not in numbers:
            raise CommandError(f"topic {topic} has no partition {partition}")
        numbers = [partition]
    return [TopicPartition(topic, number) for number in numbers]


def _render(record, output_format: str) -> str:
    if output_format == "text":
        return _text(record.value) + "\n"
    document = {
        "topic": record.topic,
        "partition": record.partition,
        "offset": record.offset,
        "timestamp": record.log_append_time,
        "timestamp_iso": format_time_ms(record.log_append_time),
        "create_time": record.create_time,
        **_json_bytes("key", record.key),
        **_json_bytes("value", record.value),
        "headers": [[name, _text(value)] for name, value in record.headers],
    }
    return json.dumps(document, ensure_ascii=False) + "\n"


def _text(data: bytes | None) -> str:
    return "" if data is None else data.decode("utf-8", errors="backslashreplace")


def _json_bytes(name: str, data: bytes | None) -> dict:
    """UTF-8 text as a string; other bytes losslessly as ``<name>_base64``."""
    if data is None:
        return {name: None}
    try:
        return {name: data.decode("utf-8")}
    except UnicodeDecodeError:
        return {f"{name}_base64": base64.b64encode(data).decode("ascii")}


def _offsets(args) -> None:
    with Consumer(args.bootstrap) as consumer:
        partitions = _partitions(args.bootstrap, args.topic, None)
        keyword = args.time.strip().lower()
        if keyword in ("earliest", "latest"):
            table = (consumer.beginning_offsets if keyword == "earliest" else consumer.end_offsets)(partitions)
            rows = [(tp.partition, table[tp], -1) for tp in partitions]
        else:
            found = consumer.offsets_for_times({tp: parse_time_ms(args.time) for tp in partitions},
                                               args.timestamp_type)
            rows = [(tp.partition, *(found[tp] or (-1, -1))) for tp in partitions]
    for partition, offset, timestamp in rows:
        if args.format == "json":
            print(json.dumps({"partition": partition, "offset": offset, "timestamp": timestamp}))
        else:
            print(f"{partition}\t{offset}\t{format_time_ms(timestamp)}")


if __name__ == "__main__":
    sys.exit(main())
