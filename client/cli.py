"""``tslog``: the command line for topics, producing lines and replaying a time range.

    tslog topics create|list|describe|alter-config|add-partitions|delete ...
    tslog produce TOPIC                       # one record per stdin line
    tslog consume TOPIC --from-time -1h [--to-time now] [--format json]
    tslog consume TOPIC --group G             # share the partitions, resume where G committed
    tslog offsets TOPIC --time 2026-11-21T10:00:00Z
    tslog groups list|describe|reset-offsets|delete ...   # see cli_groups.py

Every subcommand takes ``--bootstrap`` before or after its name (default ``$TSLOG_BOOTSTRAP``
or 127.0.0.1:9092), and ``--command-config FILE`` for TLS/SASL (``cli_security``). Errors
print one line on stderr and exit 1 (2 for a bad command line).
This module parses and dispatches; the subcommands live in ``cli_topics``, ``cli_produce``
and ``cli_offsets`` (``consume`` is here).
"""

from __future__ import annotations

import argparse
import base64
import importlib.metadata
import json
import logging
import os
import sys

from . import Admin, Consumer, ConsumerRebalanceListener, TopicPartition
from . import cli_offsets, cli_produce, cli_topics
from .cli_common import EXPECTED_ERRORS, CommandError, UsageError, error_line
from .cli_groups import TIME_OPTIONS as _GROUP_TIME_OPTIONS, add_groups_commands
from .cli_security import add_security_options, security_from
from .errors import TslogError
from .times import format_time_ms, parse_time_ms

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"
_POLL_MS = 200


_TIME_OPTIONS = ("--from-time", "--to-time", "--time", "--timestamp") + _GROUP_TIME_OPTIONS


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
    # The client's warnings (a retried batch, a new producer id) are for programs that keep
    # running; a command reports its outcome in its own one line.
    logging.getLogger("tslog").setLevel(logging.ERROR)
    try:
        args.security = security_from(args, os.environ)  # --command-config
        return args.handler(args) or 0
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # e.g. `tslog consume ... | head`
        sys.stderr.close()
        return 0
    except EXPECTED_ERRORS as error:
        print(f"tslog: error: {error_line(error)}", file=sys.stderr)
        return 2 if isinstance(error, UsageError) else 1


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tslog", description=_DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"tslog {_version()}",
                        help="print the installed tslog version and exit")
    parser.add_argument("--bootstrap", default=os.environ.get("TSLOG_BOOTSTRAP", DEFAULT_BOOTSTRAP),
                        metavar="HOST:PORT", help=_BOOTSTRAP_HELP)
    # Subcommands take --bootstrap too; SUPPRESS keeps one given before the subcommand
    # from being overwritten by the subcommand's default.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--bootstrap", default=argparse.SUPPRESS, metavar="HOST:PORT",
                        help=_BOOTSTRAP_HELP)
    add_security_options(parser, common)
    commands = parser.add_subparsers(metavar="COMMAND")
    cli_topics.register(commands, common)
    cli_produce.register(commands, common)

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

    cli_offsets.register(commands, common)
    add_groups_commands(commands, common)
    return parser


_DESCRIPTION = "the command line for topics, producing lines and replaying a time range"
_BOOTSTRAP_HELP = (f"broker address host:port[,host:port] "
                   f"(default: $TSLOG_BOOTSTRAP or {DEFAULT_BOOTSTRAP})")


def _version() -> str:
    try:
        return importlib.metadata.version("tslog")
    except importlib.metadata.PackageNotFoundError:
        return "unknown (not installed)"


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
    with Consumer(args.bootstrap, security=args.security) as consumer:
        partitions = _partitions(args.bootstrap, args.topic, args.partition, args.security)
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
    # an unknown topic is an error, not a wait
    _partitions(args.bootstrap, args.topic, None, args.security)
    with Consumer(args.bootstrap, security=args.security, group_id=args.group,
                  auto_offset_reset="earliest", enable_auto_commit=False) as consumer:
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


def _partitions(bootstrap: str, topic: str, partition: int | None,
                security=None) -> list[TopicPartition]:
    with Admin(bootstrap, security=security) as admin:
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


if __name__ == "__main__":
    sys.exit(main())
