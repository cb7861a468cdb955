"""``tslog consume TOPIC``: print the records of a time range, an offset onwards, or a
group's share, in the shape a person replaying "what happened between 10:00 and 10:05"
reads.

Where reading starts: ``--from-time`` (default earliest), or ``--offset N`` of one
``--partition`` (N < 0 counts back from the log end, as kcat's ``-o -N``). Where it ends:
``--to-time`` (before the first record at or after it), ``--max-messages``, or never (a
tail). ``--ordered`` merges the partitions of a bounded range into one timeline.

Output: ``text`` is one tab-separated line per record (time, partition, offset, key, value),
``value`` only the values (kafka-console-consumer's default, for pipes), ``json`` one object
per record, and ``--format-string`` kcat's fields (``format_string.py``).
"""

from __future__ import annotations

import base64
import collections
import json
import sys

from . import Admin, Consumer, TopicPartition
from .cli_common import CommandError, UsageError, show_reachability
from .cli_consume_group import consume_group
from .cli_properties import consumer_options
from .cli_positions import end_offsets, resolve_start
from .format_string import compile_format
from .times import format_time_ms, parse_time_ms

_POLL_MS = 200


def register(commands, common) -> None:
    consume = commands.add_parser("consume", parents=[common],
                                  help="print records from a point in time")
    consume.add_argument("topic", help="the topic to read")
    consume.add_argument("--from-time", default=None,
                         help="ISO-8601, epoch ms, relative (-15m), 'earliest' (default) or "
                              "'latest'; with --group, overrides the committed positions")
    consume.add_argument("--from-beginning", action="store_true",
                         help="kafka-console-consumer's option: from the earliest record "
                              "(with --group: where the group has committed nothing, which "
                              "is already the default)")
    consume.add_argument("--to-time", default=None,
                         help="stop before the first record at or after this time "
                              "(default: keep reading new records)")
    consume.add_argument("--timestamp-type", choices=["append", "create"], default="append",
                         help="which time --from-time/--to-time, --ordered and the printed "
                              "time refer to: LogAppendTime or CreateTime (default: append)")
    consume.add_argument("--partition", type=int, default=None,
                         help="read only this partition (default: all of them)")
    consume.add_argument("--offset", type=int, default=None,
                         help="start at this offset of --partition; negative counts back "
                              "from the log end (-10: the last ten records)")
    consume.add_argument("--max-messages", type=int, default=None,
                         help="stop after printing this many records")
    consume.add_argument("--ordered", action="store_true",
                         help="merge the partitions into one timeline (needs --to-time)")
    shape = consume.add_mutually_exclusive_group()
    shape.add_argument("--format", choices=["text", "value", "json"], default="text",
                       help="text: time, partition, offset, key and value, tab-separated; "
                            "value: the values only; json: one object per record "
                            "(default: text)")
    shape.add_argument("--format-string", default=None, metavar="FMT",
                       help="kcat's fields: %%t topic, %%p partition, %%o offset, "
                            "%%T timestamp (ms), %%I its ISO-8601 form, %%k key, %%K key "
                            "length, %%s value, %%S value length, %%h headers, %%%% a "
                            "percent sign; \\n and \\t escapes (no newline is added)")
    consume.add_argument("--consumer-property", action="append", default=[],
                         metavar="KEY=VALUE",
                         help="a consumer setting by Kafka's name, e.g. fetch.max.bytes="
                              "52428800 or max.partition.fetch.bytes=N (repeatable)")
    consume.add_argument("--group", default=None,
                         help="join this consumer group: read its share of the partitions, "
                              "from its committed offsets (else the earliest), committing")
    consume.set_defaults(handler=consume_command)


def consume_command(args) -> None:
    if args.from_beginning:  # Kafka's meaning: with a group, only where nothing is committed
        if args.from_time not in (None, "earliest"):
            raise UsageError("--from-beginning and --from-time say two different starts")
        if args.group is None:  # a group starts at the earliest where it has no commit
            args.from_time = "earliest"
    _check(args)
    render = renderer(args)
    show_reachability()
    if args.group is not None:
        consume_group(args, render)
        return
    with Consumer(args.bootstrap, security=args.security,
                  **consumer_options(args)) as consumer:
        partitions = _partitions(args.bootstrap, args.topic, args.partition, args.security)
        consumer.assign(partitions)
        if args.offset is not None:
            _seek_offset(consumer, partitions[0], args.offset)
        else:
            resolve_start(consumer, partitions, args.from_time or "earliest",
                          args.timestamp_type)
        ends = (end_offsets(consumer, partitions, args.to_time, args.timestamp_type)
                if args.to_time else None)
        starts = {tp: consumer.position(tp) for tp in partitions}
        records = _records(consumer, partitions, ends)
        if args.ordered:
            records = _merged(records, starts, ends, args.timestamp_type)
        _print(records, render, args.max_messages)


def _check(args) -> None:
    """The combinations that cannot mean anything, refused before any connection."""
    if args.offset is not None:
        if args.partition is None:
            raise UsageError("--offset needs --partition: offsets are per partition")
        if args.from_time is not None or args.group is not None:
            raise UsageError("--offset excludes --from-time and --group: it is the start")
    if args.group is not None and args.partition is not None:
        raise UsageError("--partition and --group exclude each other: the group assigns")
    if args.ordered:
        if not args.to_time:
            raise UsageError("--ordered needs --to-time: a tail has no end to merge up to")
        if args.group is not None:
            raise UsageError("--ordered excludes --group: a member sees only its share")
    if args.from_time and args.to_time and args.from_time.strip().lower() not in (
            "earliest", "latest"):
        start, end = parse_time_ms(args.from_time), parse_time_ms(args.to_time)
        if start > end:
            raise UsageError(f"--from-time {args.from_time} ({format_time_ms(start)}) is later "
                             f"than --to-time {args.to_time} ({format_time_ms(end)})")


def _seek_offset(consumer, tp: TopicPartition, offset: int) -> None:
    """``--offset``: from the start of the log if negative counts back past it; an offset
    beyond the log end is an error rather than a silent wait for it."""
    first = consumer.beginning_offsets([tp])[tp]
    end = consumer.end_offsets([tp])[tp]
    target = end + offset if offset < 0 else offset
    if target > end:
        raise CommandError(f"partition {tp.partition} of {tp.topic} ends at offset {end}; "
                           f"--offset {offset} is beyond it")
    consumer.seek(tp, max(target, first))


def _records(consumer, partitions, ends):
    """Every record in range, partition by partition as the broker returns them; ends when
    each partition reaches its end (never, without ``ends``)."""
    done: set = set()
    while True:
        if ends is not None:
            done |= {tp for tp in partitions if consumer.position(tp) >= ends[tp]}
            if len(done) == len(partitions):
                return
        for record in consumer.poll(_POLL_MS):
            if ends is not None and record.offset >= ends[TopicPartition(record.topic,
                                                                         record.partition)]:
                continue
            yield record
        sys.stdout.flush()


def _merged(records, starts: dict, ends: dict, timestamp_type: str):
    """One timeline out of the partitions' records. LogAppendTime never decreases within a
    partition (DESIGN.md, rules of time), so the earliest buffered record is the next one as
    soon as every partition still reading has a record buffered; CreateTime has no such
    order, so that range is sorted whole (it is bounded by --to-time)."""
    if timestamp_type == "create":
        yield from sorted(records, key=lambda r: (r.create_time, r.partition, r.offset))
        return
    buffered = {tp.partition: collections.deque() for tp in ends}
    last = {tp.partition: end - 1 for tp, end in ends.items()}
    reading = {tp.partition for tp, end in ends.items() if starts[tp] < end}

    def earliest():
        partition = min((queue[0].log_append_time, number)
                        for number, queue in buffered.items() if queue)[1]
        record = buffered[partition].popleft()
        if record.offset >= last[partition]:
            reading.discard(partition)
        return record

    for record in records:
        buffered[record.partition].append(record)
        while reading and all(buffered[number] for number in reading):
            yield earliest()
    while any(buffered.values()):
        yield earliest()


def _print(records, render, limit: int | None) -> None:
    if limit is not None and limit <= 0:
        return
    write = sys.stdout.write
    for record in records:
        write(render(record))
        if limit is not None:
            limit -= 1
            if limit == 0:
                break
    sys.stdout.flush()


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


# -- output -----------------------------------------------------------------------------------

def renderer(args):
    """The function that turns one record into its printed text."""
    if args.format_string is not None:
        return compile_format(args.format_string, args.timestamp_type)
    if args.format == "json":
        return _json
    if args.format == "value":
        return lambda record: _text(record.value) + "\n"
    return compile_format("%I\\t%p\\t%o\\t%k\\t%s\\n", args.timestamp_type)


def _json(record) -> str:
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
