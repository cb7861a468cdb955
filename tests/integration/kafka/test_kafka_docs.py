"""docs/kafka.md's examples run as written (only the ports and the data directory are
replaced): the broker command starts a Kafka listener and logs its line, and the Python
example prints exactly what the page says it prints."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.broker_process import BrokerProcess, free_port

DOC = Path(__file__).resolve().parents[3] / "docs" / "kafka.md"


def _blocks(kind: str) -> list[str]:
    """The page's ``kind`` blocks before its "Consumer groups" section, whose example
    test_kafka_groups.py runs against a group."""
    text = DOC.read_text()
    return re.findall(rf"```{kind}\n(.*?)```", text[:text.index("\n## Consumer groups\n")],
                      flags=re.S)


@pytest.mark.slow  # a broker and a Python with three Kafka clients to import: about 6 s
def test_the_examples_run_as_written(tmp_path):
    [command] = _blocks("bash")
    [example] = _blocks("python")
    [printed] = re.findall(r"\nprints\n\n```\n(.*?)```", DOC.read_text(), flags=re.S)
    argv = shlex.split(command)
    assert argv[0] == "tslog-broker"
    native, kafka = free_port(), free_port()
    flags = dict(zip(argv[1::2], argv[2::2]))
    assert flags == {"--data-dir": "./tslog-data", "--listen": "127.0.0.1:9092",
                     "--kafka-listen": "127.0.0.1:9093"}
    broker = BrokerProcess(tmp_path / "data", port=native,
                           args=["--kafka-listen", f"127.0.0.1:{kafka}"])
    broker.start()
    try:
        assert f"tslog-broker Kafka listener on 127.0.0.1:{kafka}" in broker.log_text()
        source = example.replace("127.0.0.1:9093", f"127.0.0.1:{kafka}").replace(
            "127.0.0.1:9092", broker.bootstrap)
        done = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True,
                              timeout=60)
        assert done.returncode == 0, done.stderr[-3000:]
        assert done.stdout == printed
    finally:
        broker.cleanup()


def test_the_table_of_served_apis_is_what_api_versions_advertises():
    """The page's "APIs and versions served" table, row by row, against ApiVersions' answer."""
    from tslog.broker.server.kafka.dispatch import ADVERTISED

    text = DOC.read_text()
    table = text[text.index("## APIs and versions served"):text.index("Each adapter")]
    documented = {}
    for key, versions in re.findall(r"^\| [A-Za-z]+ \| (\d+) \| ([\d–]+) \|", table, flags=re.M):
        low, _, high = versions.partition("–")
        documented[int(key)] = (int(low), int(high or low))
    assert documented == ADVERTISED
