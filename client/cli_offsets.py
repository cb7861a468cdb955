"""``tslog offsets TOPIC [--time T]``: per partition, the first offset at or after a time
(default: the log end, as Kafka's ``kafka-get-offsets``).

``--source-time`` (on a mirror's target topic) looks up the source cluster's LogAppendTime
instead, through ``tslog.client.mirror.source_time`` (docs/mirror.md, failing over by time).
"""

from __future__ import annotations

import json

from . import Admin, Consumer, TopicPartition
from .times import format_time_ms, parse_time_ms


# Kafka's GetOffsetShell and ListOffsets spell latest and earliest -1 and -2; "-1" is no
# relative time here (those carry a unit: -15m), so the two cannot be confused.
_KAFKA_KEYWORDS = {"-1": "latest", "-2": "earliest"}


def register(commands, common) -> None:
    offsets = commands.add_parser("offsets", parents=[common],
                                  help="the offset each partition holds for a time")
    offsets.add_argument("topic", help="the topic to look up")
    offsets.add_argument("--time", default="latest",
                         help="ISO-8601, epoch ms, relative (-15m), 'earliest' or 'latest' "
                              "(Kafka's -2 and -1; default: latest)")
    offsets.add_argument("--timestamp-type", choices=["append", "create"], default="append",
                         help="which time --time refers to: LogAppendTime or CreateTime "
                              "(default: %(default)s)")
    offsets.add_argument("--source-time", action="store_true",
                         help="on a mirror's target topic: --time is the source cluster's "
                              "LogAppendTime (the first record copied from at or after it); "
                              "timestamp shows that source time")
    offsets.add_argument("--format", choices=["text", "json"], default="text",
                         help="text (a table with a header row) or one JSON object per "
                              "partition (default: %(default)s)")
    offsets.set_defaults(handler=_offsets)


def _by_time(args, consumer, partitions, timestamp: int) -> list:
    """(partition, offset, timestamp) rows; -1, -1 where no record is at or after the time."""
    if args.source_time:
        from .mirror.lookup import reader
        from .mirror.source_time import offsets_for_source_times

        with reader(args.bootstrap, args.security) as target_reader:
            found = offsets_for_source_times(target_reader, {tp: timestamp for tp in partitions})
    else:
        found = consumer.offsets_for_times({tp: timestamp for tp in partitions},
                                           args.timestamp_type)
    return [(tp.partition, *(found[tp] or (-1, -1))) for tp in partitions]


def _offsets(args) -> None:
    with Admin(args.bootstrap, security=args.security) as admin:
        description = admin.describe_topic(args.topic)
    partitions = [TopicPartition(args.topic, info.partition) for info in description.partitions]
    with Consumer(args.bootstrap, security=args.security) as consumer:
        keyword = _KAFKA_KEYWORDS.get(args.time.strip(), args.time.strip().lower())
        if keyword in ("earliest", "latest"):
            lookup = consumer.beginning_offsets if keyword == "earliest" else consumer.end_offsets
            table = lookup(partitions)
            rows = [(tp.partition, table[tp], -1) for tp in partitions]
        else:
            rows = _by_time(args, consumer, partitions, parse_time_ms(args.time))
    if args.format == "text":
        print("partition\toffset\ttimestamp")
    for partition, offset, timestamp in rows:
        if args.format == "json":
            print(json.dumps({"partition": partition, "offset": offset, "timestamp": timestamp}))
        else:
            print(f"{partition}\t{offset}\t{format_time_ms(timestamp)}")
