"""What a Kafka user types on day one works with ``tslog`` (issue 40): ``topics describe``
and ``groups describe`` with no name describe everything, ``topics describe`` counts records
per partition (Redis's XLEN), ``consume --from-beginning``, ``offsets`` defaulting to the log
end and taking Kafka's -1/-2, and ``groups reset-offsets`` with ``--all-topics``,
``--to-current``, and ``--export`` whose CSV ``--from-file`` takes back. Real broker, the
installed console script."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TSLOG = str(Path(sys.executable).parent / "tslog")


def tslog(bootstrap: str, *args, stdin: bytes | None = None) -> str:
    result = subprocess.run([TSLOG, "--bootstrap", bootstrap, *args], input=stdin,
                            capture_output=True, timeout=60, env=dict(os.environ))
    assert result.returncode == 0, (args, result.stderr.decode())
    return result.stdout.decode()


def partition_rows(described: str, topic: str) -> dict[int, tuple[int, int, int]]:
    """{partition: (start, end, records)} from ``topics describe``'s table of ``topic``."""
    block = described.split(f"topic {topic}:", 1)[1].split("configs (", 1)[0]
    rows = {}
    for line in block.splitlines()[2:]:
        cells = line.split()
        rows[int(cells[0])] = tuple(int(cell) for cell in cells[-3:])
    return rows


def test_describe_everything_and_count_records(broker):
    b = broker.bootstrap
    tslog(b, "topics", "create", "habits-a", "--partitions", "2")
    tslog(b, "topics", "create", "habits-b")
    tslog(b, "produce", "habits-a", "--partition", "1", stdin=b"x\ny\nz\n")
    tslog(b, "produce", "habits-b", stdin=b"q\n")
    described = tslog(b, "topics", "describe")
    assert "topic habits-a: 2 partitions, 3 records" in described
    assert partition_rows(described, "habits-a") == {0: (0, 0, 0), 1: (0, 3, 3)}
    assert partition_rows(described, "habits-b") == {0: (0, 1, 1)}

    assert tslog(b, "offsets", "habits-a").splitlines()[1:] == ["0\t0\t-", "1\t3\t-"]
    assert tslog(b, "offsets", "habits-a", "--time", "-1") == tslog(b, "offsets", "habits-a")
    assert tslog(b, "offsets", "habits-a", "--time", "-2").splitlines()[1:] == \
        ["0\t0\t-", "1\t0\t-"]
    assert tslog(b, "consume", "habits-a", "--from-beginning", "--to-time", "now",
                 "--format", "value") == "x\ny\nz\n"

    for group in ("habits-g1", "habits-g2"):
        tslog(b, "consume", "habits-a", "--group", group, "--from-beginning",
              "--max-messages", "3", "--format", "value")
    every = tslog(b, "groups", "describe")
    assert "group habits-g1:" in every and "group habits-g2:" in every


def test_reset_offsets_export_then_from_file(broker, tmp_path):
    b = broker.bootstrap
    tslog(b, "topics", "create", "reset-a", "--partitions", "2")
    tslog(b, "topics", "create", "reset-b")
    tslog(b, "produce", "reset-a", "--partition", "0", stdin=b"1\n2\n3\n4\n")
    tslog(b, "produce", "reset-a", "--partition", "1", stdin=b"5\n6\n")
    tslog(b, "produce", "reset-b", stdin=b"7\n8\n9\n")
    for topic in ("reset-a", "reset-b"):
        tslog(b, "consume", topic, "--group", "resetters", "--max-messages",
              "6" if topic == "reset-a" else "3", "--format", "value")

    current = tslog(b, "groups", "reset-offsets", "resetters", "--all-topics", "--to-current",
                    "--export")
    assert sorted(current.split()) == ["reset-a,0,4", "reset-a,1,2", "reset-b,0,3"]
    plan = tslog(b, "groups", "reset-offsets", "resetters", "--all-topics", "--shift-by", "-1",
                 "--export")
    assert sorted(plan.split()) == ["reset-a,0,3", "reset-a,1,1", "reset-b,0,2"]
    assert "4" in tslog(b, "groups", "describe", "resetters")  # a dry run changed nothing
    (tmp_path / "plan.csv").write_text(plan)
    tslog(b, "groups", "reset-offsets", "resetters", "--from-file", str(tmp_path / "plan.csv"),
          "--execute")
    after = tslog(b, "groups", "reset-offsets", "resetters", "--all-topics", "--to-current",
                  "--export")
    assert sorted(after.split()) == sorted(plan.split())
