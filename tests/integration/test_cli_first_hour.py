"""The `tslog` command line where a new user first trips: --bootstrap anywhere, re-runnable
topic creation, configs, headers and CreateTimes on produce, errors that name the problem,
and the README's "Command line" examples, all against a real broker."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.broker_process import free_port

ROOT = Path(__file__).resolve().parents[2]


def tslog(*args, stdin: bytes | None = None, env: dict | None = None):
    command = [sys.executable, "-m", "tslog.client.cli", *args]
    return subprocess.run(command, input=stdin, capture_output=True, timeout=60,
                          env={**os.environ, **(env or {})})


def ok(result) -> str:
    assert result.returncode == 0, result.stderr.decode()
    return result.stdout.decode()


def one_error_line(result, code: int = 1) -> str:
    assert result.returncode == code, (result.returncode, result.stderr)
    lines = result.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tslog: error: "), result.stderr
    return lines[0].removeprefix("tslog: error: ")


def consume(bootstrap: str, topic: str, *args) -> list[dict]:
    output = ok(tslog("consume", topic, "--format", "json", "--to-time", "now",
                      "--bootstrap", bootstrap, *args))
    return [json.loads(line) for line in output.splitlines()]


@pytest.mark.slow
def test_bootstrap_before_the_command_for_every_command(broker):
    first = ["--bootstrap", broker.bootstrap]
    result = tslog(*first, "topics", "create", "events")
    assert ok(result) == "created topic events (1 partition)\n"
    assert "events" in ok(tslog(*first, "topics", "list")).split()
    produced = tslog(*first, "produce", "events", stdin=b"one\n")
    assert ok(produced) == "" and produced.stderr == b"produced 1 record to events\n"
    assert ok(tslog(*first, "consume", "events", "--to-time", "now", "--format", "value")) == "one\n"
    offsets = ok(tslog(*first, "offsets", "events", "--time", "latest")).splitlines()
    assert offsets[1:] == ["0\t1\t-"]
    assert "1 partition" in ok(tslog(*first, "topics", "describe", "events"))
    ok(tslog(*first, "topics", "delete", "events"))


def test_create_if_not_exists_runs_twice(broker):
    args = ("topics", "create", "events", "--partitions", "2", "--bootstrap", broker.bootstrap)
    assert ok(tslog(*args, "--if-not-exists")) == "created topic events (2 partitions)\n"
    assert ok(tslog(*args, "--if-not-exists")) == "topic events exists already; left as it is\n"
    assert "exists" in one_error_line(tslog(*args))


def test_deleting_a_missing_topic_says_it_does_not_exist(broker):
    message = one_error_line(tslog("topics", "delete", "ordres", "--bootstrap", broker.bootstrap))
    assert message == "topic ordres does not exist"


@pytest.mark.slow
def test_alter_config_and_describe_marks_overrides(broker):
    b = ("--bootstrap", broker.bootstrap)
    ok(tslog("topics", "create", "events", *b))
    described = ok(tslog("topics", "describe", "events", *b))
    assert re.search(r"^    retention\.ms=\d+$", described, re.M), described  # a default
    assert "max.message.bytes=" in described and "  * " not in described

    changed = ok(tslog("topics", "alter-config", "events", "--config", "retention.ms=3600000",
                       "--config", "segment.ms=60000", *b))
    assert changed == "altered topic events: retention.ms=3600000, segment.ms=60000\n"
    described = ok(tslog("topics", "describe", "events", *b))
    assert "  * retention.ms=3600000\n" in described and "  * segment.ms=60000\n" in described

    ok(tslog("topics", "alter-config", "events", "--delete-config", "segment.ms", *b))
    described = ok(tslog("topics", "describe", "events", *b))
    assert "* segment.ms" not in described and "  * retention.ms=3600000\n" in described

    assert one_error_line(tslog("topics", "alter-config", "nope", "--config", "retention.ms=1",
                                *b)) == "topic nope does not exist"
    assert one_error_line(tslog("topics", "describe", "nope", *b)) == "topic nope does not exist"
    assert "bogus.key" in one_error_line(
        tslog("topics", "alter-config", "events", "--config", "bogus.key=1", *b))
    assert "--config" in one_error_line(tslog("topics", "alter-config", "events", *b), code=2)


@pytest.mark.slow
def test_produce_headers_timestamp_and_compression(broker):
    b = ("--bootstrap", broker.bootstrap)
    ok(tslog("topics", "create", "events", *b))
    ok(tslog("produce", "events", "--header", "source=shell", "--header", "city=Zürich",
             "--timestamp", "2026-01-02T03:04:05Z", "--key-separator", ":",
             stdin=b"k:v1\nk:v2\n", *b))
    records = consume(broker.bootstrap, "events")
    assert [(r["key"], r["value"]) for r in records] == [("k", "v1"), ("k", "v2")]
    assert all(r["headers"] == [["source", "shell"], ["city", "Zürich"]] for r in records)
    assert all(r["create_time"] == 1767323045000 for r in records)

    before = time.time_ns() // 1_000_000
    ok(tslog("produce", "events", "--timestamp", "-2h", stdin=b"late\n", *b))
    (late,) = [r for r in consume(broker.bootstrap, "events") if r["value"] == "late"]
    assert before - 2 * 3_600_000 - 5_000 <= late["create_time"] <= before - 2 * 3_600_000 + 60_000
    assert late["timestamp"] >= before  # LogAppendTime stays the broker's

    assert "--timestamp" in one_error_line(
        tslog("produce", "events", "--timestamp", "yesterday-ish", *b), code=2)
    assert "--header" in one_error_line(
        tslog("produce", "events", "--header", "novalue", *b), code=2)


def test_zstd_makes_the_log_smaller(broker):
    b = ("--bootstrap", broker.bootstrap)
    lines = b"".join(b"the same fairly long line of text, record %06d\n" % i for i in range(3000))
    for topic, extra in (("plain", ()), ("packed", ("--compression", "zstd"))):
        ok(tslog("topics", "create", topic, *b))
        ok(tslog("produce", topic, *extra, stdin=lines, *b))
    assert len(consume(broker.bootstrap, "packed")) == 3000

    def log_bytes(topic):
        return sum(p.stat().st_size for p in (broker.data_dir / f"{topic}-0").glob("*.log"))

    assert log_bytes("packed") * 3 < log_bytes("plain")


def test_a_record_over_the_limit_names_its_size_and_the_limit(broker):
    b = ("--bootstrap", broker.bootstrap)
    ok(tslog("topics", "create", "events", "--config", "max.message.bytes=2000", *b))
    message = one_error_line(tslog("produce", "events", stdin=b"small\n" + b"x" * 5000 + b"\n", *b))
    assert message == ("line 2: a record of 5000 bytes (key, value and headers) is over "
                       "topic events's max.message.bytes limit of 2000 bytes (raise it: "
                       "tslog topics alter-config events --config max.message.bytes=N); "
                       "1 earlier line was sent")
    assert [r["value"] for r in consume(broker.bootstrap, "events")] == ["small"]
    # Under the limit by itself, over it once framed as a batch: the broker refuses it.
    # Its message says the batch's size as the broker measured it, and the broker's limit.
    message = one_error_line(tslog("produce", "events", stdin=b"y" * 1990 + b"\n", *b))
    framed = re.fullmatch(
        r"line 1: a record of 1990 bytes \(key, value and headers\) with its batch's framing "
        r"is over topic events's max\.message\.bytes limit of 2000 bytes \(the broker: a "
        r"batch of (\d+) bytes is larger than the topic's max\.message\.bytes \(2000\)\) "
        r"\(raise it: tslog topics alter-config events --config max\.message\.bytes=N\)",
        message)
    assert framed is not None and int(framed.group(1)) > 2000, message
    # Many small records still go, in batches under the limit.
    many = b"".join(b"record-%04d\n" % i for i in range(1000))
    assert b"produced 1000 records" in tslog("produce", "events", stdin=many, *b).stderr


@pytest.mark.parametrize("args", [
    ("topics", "list"), ("topics", "create", "t"), ("topics", "describe", "t"),
    ("topics", "delete", "t"), ("topics", "alter-config", "t", "--config", "retention.ms=1"),
    ("produce", "t"), ("consume", "t"), ("offsets", "t", "--time", "now"),
])
def test_refused_connection_is_one_plain_line_for_every_command(args):
    address = f"127.0.0.1:{free_port()}"
    message = one_error_line(tslog(*args, "--bootstrap", address, stdin=b"x\n"))
    assert message == f"cannot connect to {address}: connection refused (is tslog-broker running?)"


def test_offsets_text_has_a_header_row(broker):
    b = ("--bootstrap", broker.bootstrap)
    ok(tslog("topics", "create", "events", "--partitions", "2", *b))
    rows = ok(tslog("offsets", "events", "--time", "earliest", *b)).splitlines()
    assert rows == ["partition\toffset\ttimestamp", "0\t0\t-", "1\t0\t-"]


def readme_cli_examples() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("\n## Command line\n")
    section = text[start:text.index("\n##", start + 1)]  # up to its first subsection
    (block,) = re.findall(r"```sh\n(.*?)```", section, re.S)
    return [line for line in block.splitlines() if line.strip()]


@pytest.mark.slow
def test_readme_command_line_examples_run_in_order(broker, tmp_path):
    bindir = tmp_path / "bin"  # `tslog` on PATH runs this checkout's CLI
    bindir.mkdir()
    (bindir / "tslog").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m tslog.client.cli "$@"\n')
    (bindir / "tslog").chmod(0o755)
    env = {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}",
           "TSLOG_BOOTSTRAP": broker.bootstrap}
    examples = readme_cli_examples()
    assert len(examples) >= 10
    outputs = {}
    for line in examples:
        line = line.replace("127.0.0.1:9092", broker.bootstrap)
        result = subprocess.run(["sh", "-c", line], capture_output=True, env=env, timeout=60)
        assert result.returncode == 0, (line, result.stderr)
        outputs[line] = result.stdout.decode()
    described = next(out for line, out in outputs.items() if "topics describe" in line)
    assert "3 partitions" in described and "  * retention.ms=3600000" in described
    assert "* max.message.bytes" not in described
    replay = next(out for line, out in outputs.items() if "--format json" in line)
    values = sorted(json.loads(row)["value"] for row in replay.splitlines())
    assert values == ["hello", "late", "world"]
    by_create = next(out for line, out in outputs.items() if "--timestamp-type create" in line)
    assert sorted(row.split("\t")[-1] for row in by_create.splitlines()) == [
        "hello", "late", "world"]
    ordered = [row.split("\t") for row in
               next(out for line, out in outputs.items() if "--ordered" in line).splitlines()]
    assert [row[-1] for row in ordered][-1] == "late" and len(ordered) == 3
    assert [row[0] for row in ordered] == sorted(row[0] for row in ordered)  # ISO times
    from_offset = next(out for line, out in outputs.items() if "--offset -2" in line)
    assert all(re.fullmatch(r"0:\d+ (k\d)?=\w+", row) for row in from_offset.splitlines())
