"""A consumer-group member in its own process, for tests that kill or add members.

    python _group_member.py BOOTSTRAP GROUP TOPIC [--heartbeat-ms N] [--no-commit]

It subscribes with a rebalance listener and writes one JSON line per event to stdout:
``{"event": "assigned"|"revoked"|"lost", "partitions": [[topic, p], ...]}`` from the
listener, ``{"event": "records", "records": [[p, offset, value], ...]}`` for each poll that
returned records (then it commits them, unless --no-commit), ``{"event": "ready"}`` once
subscribed. SIGTERM makes it close the consumer (commit, leave the group) and exit 0.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys

from tslog.client import Consumer, ConsumerRebalanceListener


def emit(event: str, **fields) -> None:
    sys.stdout.write(json.dumps({"event": event, **fields}) + "\n")
    sys.stdout.flush()


class Reporter(ConsumerRebalanceListener):
    def on_partitions_assigned(self, assigned) -> None:
        emit("assigned", partitions=sorted(assigned))

    def on_partitions_revoked(self, revoked) -> None:
        emit("revoked", partitions=sorted(revoked))

    def on_partitions_lost(self, lost) -> None:
        emit("lost", partitions=sorted(lost))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("bootstrap")
    parser.add_argument("group")
    parser.add_argument("topic")
    parser.add_argument("--heartbeat-ms", type=int, default=None)
    parser.add_argument("--no-commit", action="store_true")
    args = parser.parse_args()
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    consumer = Consumer(args.bootstrap, group_id=args.group, auto_offset_reset="earliest",
                        enable_auto_commit=False, heartbeat_interval_ms=args.heartbeat_ms)
    try:
        consumer.subscribe([args.topic], listener=Reporter())
        emit("ready")
        while not stopping:
            records = consumer.poll(100)
            if records:
                # Reported, then committed, as an application that must not lose a record
                # handles it: killed between the two, the member has reported records that
                # its successor reads again, never committed records nobody reported.
                emit("records", records=[[r.partition, r.offset, r.value.decode()]
                                         for r in records])
                if not args.no_commit:
                    consumer.commit()
    finally:
        consumer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
