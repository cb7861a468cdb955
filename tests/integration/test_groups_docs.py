"""The consumer-group examples of README.md ("Consumer groups from the command line") and
docs/client.md (Admin) run as written, in order, against a real broker holding an empty group
'readers' with committed offsets on 'events'. Only the broker address is supplied: through
``$TSLOG_BOOTSTRAP`` for the commands, by replacing 127.0.0.1:9092 in the Python example."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.wire import Wire
from tslog.client import Admin, Producer, TopicPartition
from tslog.protocol.messages import ApiKey

pytestmark = pytest.mark.timeout(180)

ROOT = Path(__file__).resolve().parents[2]


def section(text: str, heading: str) -> str:
    start = text.index(heading)
    end = text.find("\n#", start + len(heading))
    return text[start:end if end >= 0 else len(text)]


def empty_group_with_offsets(broker) -> None:
    """'events' (3 partitions, 4 records each) and a group 'readers' that had a member, left
    empty, with every partition committed at offset 3."""
    with Admin(broker.bootstrap) as admin:
        admin.create_topic("events", partitions=3)
    with Producer(broker.bootstrap, linger_ms=0) as producer:
        for i in range(12):
            producer.send("events", b"%d" % i, partition=i % 3).get(10)
    with Wire(broker.host, broker.port) as wire:
        joined = wire.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, {
            "group_id": "readers", "member_id": "", "member_epoch": 0,
            "subscribed_topics": ["events"], "owned": []})
        assert joined["error_code"] == 0, joined
        left = wire.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, {
            "group_id": "readers", "member_id": joined["member_id"], "member_epoch": -1,
            "subscribed_topics": None, "owned": None})
        assert left["error_code"] == 0, left
    with Admin(broker.bootstrap) as admin:
        admin.alter_consumer_group_offsets(
            "readers", {TopicPartition("events", p): 3 for p in range(3)})


@pytest.mark.slow
def test_readme_group_commands_run_in_order(broker, tmp_path):
    empty_group_with_offsets(broker)
    text = section((ROOT / "README.md").read_text(encoding="utf-8"),
                   "### Consumer groups from the command line")
    (block,) = re.findall(r"```sh\n(.*?)```", text, flags=re.S)
    commands = [shlex.split(line, comments=True) for line in block.splitlines() if line.strip()]
    assert [words[:2] for words in commands] == [["tslog", "groups"]] * len(commands)
    assert {words[2] for words in commands} == {"list", "describe", "reset-offsets", "delete"}
    env = {**os.environ, "TSLOG_BOOTSTRAP": broker.bootstrap}
    outputs = []
    offsets = {}
    raw_lines = [line for line in block.splitlines() if line.strip()]
    for words, raw in zip(commands, raw_lines):
        if words[2] == "delete":  # what the reset-offsets commands left, before it goes
            with Admin(broker.bootstrap) as admin:
                offsets = admin.list_consumer_group_offsets("readers")
        # as written, through a shell, in a directory of its own: a line may redirect
        # (--export > FILE) and a later one read that file
        line = shlex.join([sys.executable, "-m", "tslog.client.cli"]) + raw.removeprefix("tslog")
        done = subprocess.run(["sh", "-c", line], env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, (words, done.stderr)
        outputs.append(done.stdout)
    assert outputs[0].split()[:2] == ["readers", "EMPTY"]
    assert "readers" in outputs[1] and "LAG-SECONDS" in outputs[1]
    # -15m is before every record: all at 0, then partition 0 shifted back (clamped to 0)
    assert {tp.partition: value.offset for tp, value in offsets.items()} == {0: 0, 1: 0, 2: 0}
    with Admin(broker.bootstrap) as admin:
        assert admin.list_consumer_groups() == []  # the last command deleted it
        assert admin.list_consumer_group_offsets("readers") == {}  # and its offsets


def test_client_doc_admin_group_example_runs(broker):
    empty_group_with_offsets(broker)
    text = section((ROOT / "docs" / "client.md").read_text(encoding="utf-8"), "## Admin")
    start = text.index("    from tslog.client import Admin, TopicPartition")
    lines = []
    for line in text[start:].splitlines():
        if line and not line.startswith("    "):
            break
        lines.append(line[4:])
    source = "\n".join(lines).replace("127.0.0.1:9092", broker.bootstrap)
    assert "delete_consumer_groups" in source
    done = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    with Admin(broker.bootstrap) as admin:
        assert admin.list_consumer_groups() == []
        assert admin.list_consumer_group_offsets("readers") == {}  # deleted with the group
