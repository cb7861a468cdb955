"""The Spark examples of docs/spark.md run as written, in order (README.md's run in
test_readme_in_order.py, on the state its quick start leaves).

Each document's Python blocks become one script, run by this interpreter in a child process
with ``PYSPARK_PYTHON`` unset and only the system directories on ``PATH`` (so the first
``python3`` Spark would pick by default cannot import tslog): the builder line the examples
give is what makes the workers right. Only the broker address, the times and the output
paths are replaced, since the broker listens on an ephemeral port.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tslog.client import Admin, Producer

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
README_START = "2026-11-22T10:00:00Z"
README_END = "2026-11-22T11:00:00Z"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def spark_section(readme: str) -> str:
    start = readme.index("\n## Spark\n")
    return readme[start:readme.index("\n## ", start + 1)]


def run_script(source: str, cwd: Path) -> list[str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "PYTHONPATH")}
    env.update(PATH="/usr/bin:/bin", SPARK_LOCAL_IP="127.0.0.1")
    done = subprocess.run([sys.executable, "-c", source], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=280)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.splitlines()


@pytest.fixture(scope="module")
def events_topic(broker):
    """'events' with 3 records before t1, 5 in [t1, t2), 2 after t2 (LogAppendTime)."""
    with Admin(broker.bootstrap) as admin:
        admin.create_topic("events", partitions=2)
    times = []
    with Producer(broker.bootstrap, linger_ms=0) as producer:
        for phase, count in (("before", 3), ("inside", 5), ("after", 2)):
            time.sleep(0.05)
            times.append(int(time.time() * 1000))
            time.sleep(0.05)
            for i in range(count):
                producer.send("events", f"{phase}-{i}".encode(), partition=i % 2).get(10)
    return {"t1": times[1], "t2": times[2]}


def test_docs_spark_examples(broker, events_topic, tmp_path):
    blocks = python_blocks((ROOT / "docs" / "spark.md").read_text(encoding="utf-8"))
    assert len(blocks) == 2
    script = "\n".join(blocks) + (
        "\ndf = spark.read.format('tslog').option('bootstrap', '%s').option('topic', 'events')"
        ".load()\nprint('COUNT', df.count())\n" % broker.bootstrap)
    lines = run_script(script, tmp_path)
    assert "COUNT 10" in lines
