"""The example of docs/client.md's "Consumer groups" section runs as written (only the broker
address is replaced) and does what its comments say: the listener hears of every partition,
the records are read, and close() committed the positions."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tslog.client import Admin, Consumer, Producer, TopicPartition

DOC = Path(__file__).resolve().parents[2] / "docs" / "client.md"


def section_example() -> str:
    text = DOC.read_text()
    start = text.index("\n## Consumer groups\n")
    section = text[start:text.index("\n## ", start + 1)]
    (block,) = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    return block


def test_the_consumer_groups_example_runs(broker):
    with Admin(broker.bootstrap) as admin:
        admin.create_topic("events", 3)
    with Producer(broker.bootstrap) as producer:
        for n in range(10):
            producer.send("events", b"%d" % n, partition=n % 3)
        producer.flush()
    source = section_example().replace("127.0.0.1:9092", broker.bootstrap)
    done = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == ["reading [0, 1, 2]", "10 records", "giving up [0, 1, 2]"]
    with Consumer(broker.bootstrap, group_id="billing") as consumer:
        assert [consumer.committed(TopicPartition("events", p)) for p in range(3)] == [4, 3, 3]
