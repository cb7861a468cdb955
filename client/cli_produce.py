"""``tslog produce TOPIC``: each line of stdin becomes one record."""

from __future__ import annotations

import sys

from . import Admin, Producer
from .cli_common import CommandError, UsageError, key_values, plural
from .cli_properties import producer_options
from .errors import MessageTooLargeError, UnknownTopicOrPartitionError
from .times import TimeFormatError, parse_time_ms

_DEFAULT_BATCH_BYTES = 256 * 1024
_BATCH_FRAMING_BYTES = 512  # kept free under max.message.bytes for a batch's own header
_WAIT_EVERY = 10_000  # records sent before waiting for their acknowledgements


def register(commands, common) -> None:
    produce = commands.add_parser("produce", parents=[common],
                                  help="send each line of stdin as one record")
    produce.add_argument("topic", help="the topic to write to")
    produce.add_argument("--key-separator", default=None, metavar="SEP",
                         help="split each line at the first SEP into key and value")
    produce.add_argument("--partition", type=int, default=None,
                         help="write every record to this partition (default: by key, or "
                              "spread over the partitions when there is none)")
    produce.add_argument("--acks", choices=["0", "1", "all"], default="all",
                         help="acknowledgement to wait for: 0 none, 1 the leader, all every "
                              "in-sync replica (default: %(default)s)")
    produce.add_argument("--header", action="append", default=[], metavar="KEY=VALUE",
                         help="a header on every record, its value as UTF-8 (repeatable)")
    produce.add_argument("--timestamp", default=None, metavar="TIME",
                         help="the records' CreateTime: ISO-8601, epoch ms, relative (-15m) or "
                              "now (default: the time each record is sent)")
    produce.add_argument("--compression", choices=["none", "zstd"], default="none",
                         help="compress the batches (default: %(default)s)")
    produce.add_argument("--producer-property", action="append", default=[],
                         metavar="KEY=VALUE",
                         help="a producer setting by Kafka's name, e.g. max.request.size="
                              "31457280 or linger.ms=50 (repeatable)")
    produce.set_defaults(handler=_produce)


def _produce(args) -> None:
    headers = [(key, value.encode("utf-8"))
               for key, value in key_values(args.header, "--header").items()]
    timestamp_ms = _timestamp(args.timestamp)
    acks = "all" if args.acks == "all" else int(args.acks)
    separator = args.key_separator.encode() if args.key_separator else None
    limit = _max_message_bytes(args.bootstrap, args.topic, args.security)
    # Records share a batch only while it stays under the topic's limit, so only a record
    # too large on its own is refused.
    batch_size = (_DEFAULT_BATCH_BYTES if limit is None
                  else max(1, min(_DEFAULT_BATCH_BYTES, limit - _BATCH_FRAMING_BYTES)))
    compression = None if args.compression == "none" else args.compression
    count = 0
    options = {"acks": acks, "compression": compression, "batch_size": batch_size,
               **producer_options(args)}
    with Producer(args.bootstrap, security=args.security, **options) as producer:
        sent: list[tuple[int, int, object]] = []  # (line number, record size, future)
        for line in sys.stdin.buffer:
            value = line.rstrip(b"\r\n")
            key = None
            if separator is not None and separator in value:
                key, value = value.split(separator, 1)
            count += 1
            size = len(value) + len(key or b"") + sum(len(k) + len(v) for k, v in headers)
            if limit is not None and size > limit:
                raise CommandError(_too_large(args.topic, count, size, limit) + _sent_before(count))
            future = producer.send(args.topic, value, key=key, partition=args.partition,
                                   timestamp_ms=timestamp_ms, headers=headers or None)
            sent.append((count, size, future))
            if len(sent) >= _WAIT_EVERY:
                _wait_all(sent, args.topic, limit)
        producer.flush()
        _wait_all(sent, args.topic, limit)
    print(f"produced {plural(count, 'record')} to {args.topic}", file=sys.stderr)


def _timestamp(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return parse_time_ms(text)
    except TimeFormatError as error:
        raise UsageError(f"--timestamp: {error}") from None


def _max_message_bytes(bootstrap: str, topic: str, security=None) -> int | None:
    """The topic's ``max.message.bytes``, or None when it cannot be read (no such topic: the
    produce itself then says so)."""
    with Admin(bootstrap, security=security) as admin:
        try:
            entry = admin.describe_configs(topic).get("max.message.bytes")
        except UnknownTopicOrPartitionError:
            return None
    return int(entry.value) if entry is not None and entry.value.isdigit() else None


def _wait_all(sent: list, topic: str, limit: int | None) -> None:
    for line_number, size, future in sent:
        try:
            future.get(60)
        except MessageTooLargeError as error:
            if limit is None or "max_request_size" in str(error):  # the client's own check
                raise
            raise CommandError(_too_large(topic, line_number, size, limit,
                                          error.broker_message)) from None
    sent.clear()


def _sent_before(line_number: int) -> str:
    if line_number == 1:
        return ""
    verb = "was" if line_number == 2 else "were"
    return f"; {plural(line_number - 1, 'earlier line')} {verb} sent"


def _too_large(topic: str, line_number: int, size: int, limit: int,
               broker_message: str | None = None) -> str:
    """The refusal of one line; ``broker_message`` is the broker's (its batch's size as it
    measured it, and the limit), shown when the record alone was within the limit."""
    over = "is over" if size > limit else "with its batch's framing is over"
    measured = f" (the broker: {broker_message})" if broker_message else ""
    return (f"line {line_number}: a record of {size} bytes (key, value and headers) {over} "
            f"topic {topic}'s max.message.bytes limit of {limit} bytes{measured} (raise it: "
            f"tslog topics alter-config {topic} --config max.message.bytes=N)")
