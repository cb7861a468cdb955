"""What a Kafka tool prints, with the parts that differ by nature (and are listed in
docs/kafka.md's "What differs") replaced by placeholders, so that Apache Kafka's output and
tslog's can be compared as text.

Each rule names its reason: random ids, node ids (Kafka's reference is node 1, tslog's node
0), wall-clock timestamps, column widths (Kafka's tables pad to the longest cell), and the
lines the tools print about themselves (deprecation warnings, KIP-848 advertising).
"""

from __future__ import annotations

import re

_NOISE = ("Warning: --property is deprecated", "Option --property is deprecated",
          "The consumer rebalance protocol (KIP-848)", "Option --producer-props",
          "Option --consumer-props")


def lines(text: str) -> list[str]:
    """Non-empty lines without the tools' notes about themselves."""
    return [line.rstrip() for line in text.splitlines()
            if line.strip() and not line.startswith(_NOISE)]


def timestamps(text: str) -> str:
    """``CreateTime:1790000000000`` -> ``CreateTime:T`` (the brokers' clocks differ)."""
    return re.sub(r"(CreateTime|LogAppendTime|NO_TIMESTAMP):-?\d+", r"\1:T", text)


def topic_description(text: str) -> list[str]:
    """``kafka-topics --describe``: no topic id (tslog has none: the null id is not printed),
    node ids as N, ELR as -, and only the topic's own configs (Kafka also lists broker-level
    dynamic defaults, ``min.insync.replicas=1``, that its storage format sets)."""
    out = []
    for line in lines(text):
        line = re.sub(r"\tTopicId: \S+", "", line)
        line = re.sub(r"(Leader|Replicas|Isr): [\d,]+", r"\1: N", line)
        line = re.sub(r"(Elr|LastKnownElr):[^\t]*", r"\1: -", line)
        line = re.sub(r"min\.insync\.replicas=\d+,?", "", line).rstrip(",")
        out.append(line)
    return out


def table(text: str, member_ids: bool = True) -> list[list[str]]:
    """A padded table (``kafka-consumer-groups``) as rows of cells, sorted after the header
    row; member ids (``console-consumer-<uuid>``, random) as M."""
    rows = [line.split() for line in lines(text)]
    if member_ids:
        rows = [[re.sub(r"-[0-9a-f]{8}-[0-9a-f-]{27}$", "-M", cell) for cell in row]
                for row in rows]
    return rows[:1] + sorted(rows[1:])
