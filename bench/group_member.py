"""One consumer-group member for ``bench/groups.py``: a separate process, as real members are.

    python bench/group_member.py BOOTSTRAP GROUP TOPIC

Joins GROUP, subscribes to TOPIC, polls until killed or until stdin closes, and prints one
JSON line per event (wall-clock times, so the bench can compare them with its own):
``assigned`` (every change of its partitions), ``first`` (when the poll bringing its first
record returned), ``reading`` (the first record of each partition since it got it), and
``count`` (records so far, with the time their poll was handled, every 0.2 s).
"""

from __future__ import annotations

import json
import sys
import threading
import time

from tslog.client import Consumer


def emit(event: str, **fields) -> None:
    print(json.dumps({"event": event, "t": time.time(), **fields}), flush=True)


def main() -> int:
    bootstrap, group, topic = sys.argv[1:4]
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    count, newest, reported = 0, 0.0, 0.0
    owned: frozenset = frozenset()
    reading: set[int] = set()
    with Consumer(bootstrap, group_id=group, auto_offset_reset="earliest") as consumer:
        emit("start")
        consumer.subscribe([topic])
        while not stop.is_set():
            records = consumer.poll(timeout_ms=50)
            now = time.time()
            assignment = frozenset(tp.partition for tp in consumer.assignment())
            if assignment != owned:
                owned = assignment
                reading &= owned
                emit("assigned", partitions=sorted(owned))
            if records:
                if not count:
                    emit("first", t=now)  # when the poll that brought it returned
                count += len(records)
                for partition in {record.partition for record in records} - reading:
                    reading.add(partition)
                    emit("reading", partition=partition)
                newest = time.time()  # these records are read (and handled) by now
            if now - reported >= 0.2:
                reported = now
                emit("count", n=count, newest=newest)
        consumer.commit()
    return 0


if __name__ == "__main__":
    sys.exit(main())
