"""docs/cluster.md "Grow, shrink and rebalance": the commands block runs as written, in
order, through a shell, against a real cluster as the text sets it up (brokers 0-2 holding
``events``, brokers 3 and 4 just started). Only the broker address is supplied, through
``$TSLOG_BOOTSTRAP``. Each command's effect is checked on the cluster, and every record
produced before is still there, once, afterwards."""

from __future__ import annotations

import json
from collections import Counter
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.replication import bootstrap, consume_all, wait_for
from tslog.client import Admin, Producer

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[2]


def commands() -> list[str]:
    text = (ROOT / "docs" / "cluster.md").read_text(encoding="utf-8")
    section = text.split("\n## Grow, shrink and rebalance\n", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```sh\n(.*?)```", section, flags=re.S)
    return [line for line in block.splitlines() if line.strip()]


def run(line: str, servers: str, cwd: Path) -> str:
    command = shlex.join([sys.executable, "-m", "tslog.client.cli"]) + line.removeprefix("tslog")
    done = subprocess.run(["sh", "-c", command], cwd=cwd, capture_output=True, text=True,
                          timeout=180, env={**os.environ, "TSLOG_BOOTSTRAP": servers})
    assert done.returncode == 0, (line, done.stderr)
    return done.stdout


def placement(servers: str) -> dict[int, list[int]]:
    with Admin(servers) as admin:
        return {p.partition: p.replicas for p in admin.describe_topic("events").partitions}


def test_the_grow_shrink_and_rebalance_commands_run_as_written(cluster_factory, tmp_path):
    brokers = cluster_factory(3)
    with Admin(bootstrap(brokers)) as admin:
        admin.create_topic("events", partitions=3, replication_factor=2)
    with Producer(bootstrap(brokers), acks="all") as producer:
        for future in [producer.send("events", b"%d" % i, partition=i % 3) for i in range(30)]:
            future.get(30)
    brokers += cluster_factory(2, first_node=3)
    servers = bootstrap(brokers)
    lines = commands()
    assert [line.split()[:3] for line in lines][0] == ["tslog", "brokers", "list"]

    listed = run(lines[0], servers, tmp_path).splitlines()
    rows = {int(row.split("\t")[0]): row.split("\t") for row in listed[1:]}
    assert sorted(rows) == [0, 1, 2, 3, 4] and rows[3][2] == rows[4][2] == "0"

    assert run(lines[1], servers, tmp_path) == ""  # the plan went to plan.json
    plan = json.loads((tmp_path / "plan.json").read_text())
    assert plan["version"] == 1
    proposed = {p["partition"]: p["replicas"] for p in plan["partitions"]}
    held = Counter(b for r in proposed.values() for b in r)
    assert max(held.values()) <= 2 and len({r[0] for r in proposed.values()}) == 3
    assert "moved 3 partitions" in run(lines[2], servers, tmp_path)
    assert placement(servers) == proposed

    assert run(lines[3], servers, tmp_path) == "no reassignment under way\n"
    run(lines[4], servers, tmp_path)  # --move-broker 1 --to 3
    assert all(1 not in r for r in placement(servers).values())

    out = run(lines[5], servers, tmp_path)  # decommission 4
    assert out.endswith("broker 4 holds no replicas: it is safe to stop it\n")
    assert all(4 not in r for r in placement(servers).values())
    wait_for(lambda: not list(brokers[4].data_dir.glob("events-*")), 30,
             "broker 4's logs of events deleted")
    brokers[4].terminate()

    assert run(lines[6], servers.rsplit(",", 1)[0], tmp_path).startswith(
        "preferred leaders elected for ")

    def preferred_and_in_sync():
        with Admin(bootstrap(brokers[:4])) as admin:
            return all(p.leader == p.replicas[0] and sorted(p.isr) == sorted(p.replicas)
                       for p in admin.describe_topic("events").partitions)
    wait_for(preferred_and_in_sync, 30, "every partition led by its preferred replica")
    values = sorted(int(r.value) for r in consume_all(bootstrap(brokers[:4]), "events", 30))
    assert values == list(range(30))
