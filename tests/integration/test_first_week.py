"""Where a new user, a Kafka user or a Redis user trips in the first week (issue 40): every
entry point answers --version, errors name the setting or file to change, and the CLI speaks
to the wrong port or a secured port with one line saying what to do. Real brokers, real
console scripts of this venv."""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.broker_process import BrokerProcess, free_port
from tests.helpers.tls import make_tls_files
from tslog.client import Admin, Producer
from tslog.client.errors import MessageTooLargeError

BIN = Path(sys.executable).parent


def run(program: str, *args, stdin: bytes | None = None, env: dict | None = None):
    return subprocess.run([str(BIN / program), *args], input=stdin, capture_output=True,
                          timeout=60, env={**os.environ, **(env or {})})


@pytest.mark.parametrize("program", ["tslog", "tslog-broker", "tslog-mirror"])
def test_every_entry_point_prints_its_version(program):
    result = run(program, "--version")
    assert result.returncode == 0, result.stderr
    name, version = result.stdout.decode().split()
    assert name == program and version[0].isdigit()


def one_error(result) -> str:
    assert result.returncode == 1, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tslog: error: "), result.stderr
    return lines[0]


def test_plain_tslog_on_a_tls_port_names_command_config_not_python(tmp_path):
    tls = make_tls_files(tmp_path / "tls")
    broker = BrokerProcess(tmp_path / "data", config=tls.broker_config(),
                           ssl_context=tls.client_context()).start()
    try:
        line = one_error(run("tslog", "--bootstrap", broker.bootstrap, "topics", "list"))
        assert "--command-config FILE" in line and "$TSLOG_COMMAND_CONFIG" in line
        assert "Security(" not in line and "security.protocol=SSL" in line
        # and the file it names works: the same command, the file from the variable
        config = tmp_path / "client.properties"
        config.write_text(f"security.protocol=SSL\nssl.ca.location={tls.ca}\n")
        listed = run("tslog", "--bootstrap", broker.bootstrap, "topics", "list",
                     env={"TSLOG_COMMAND_CONFIG": str(config)})
        assert listed.returncode == 0, listed.stderr
    finally:
        broker.cleanup()


def test_plain_tslog_on_a_sasl_port_names_command_config(tmp_path):
    users = tmp_path / "users"
    users.write_text("admin:not-on-the-command-line\n")
    broker = BrokerProcess(tmp_path / "data", config={
        "sasl_mechanisms": "SCRAM-SHA-256", "sasl_bootstrap_users_file": str(users)})
    broker.launch()
    try:
        line = ""
        for _ in range(50):  # until it listens: a refused connect is another error
            line = one_error(run("tslog", "--bootstrap", broker.bootstrap, "topics", "list"))
            if "closed the connection" in line:
                break
        assert "--command-config FILE" in line and "SASL" in line
        assert "not-on-the-command-line" not in line
    finally:
        broker.cleanup()


def test_tslog_on_the_kafka_port_says_it_is_a_kafka_listener(tmp_path):
    kafka_port = free_port()
    broker = BrokerProcess(tmp_path / "data",
                           args=["--kafka-listen", f"127.0.0.1:{kafka_port}"]).start()
    try:
        line = one_error(run("tslog", "--bootstrap", f"127.0.0.1:{kafka_port}",
                             "topics", "list"))
        assert "Kafka listener" in line and "msgpack" not in line
        assert "listen address" in line
        assert broker.running  # and it serves on
    finally:
        broker.cleanup()


def test_a_config_file_with_type_and_range_errors_reports_every_one(tmp_path):
    config = tmp_path / "broker.toml"
    config.write_text('max_connections = "many"\nmax_frame_bytes = true\nnode_id = -1\n'
                      'request_timeout_ms = 0\n[log]\n"retention.ms" = "x"\n'
                      '"segment.bytes" = -1\n')
    result = run("tslog-broker", "--data-dir", str(tmp_path / "data"), "--config", str(config))
    assert result.returncode == 2, result.stderr
    message = result.stderr.decode()
    for key in ("max_connections", "max_frame_bytes", "node_id", "request_timeout_ms",
                "retention.ms", "segment.bytes"):
        assert key in message, (key, message)
    assert "Traceback" not in message and not (tmp_path / "data").exists()


def test_the_start_up_config_line_shows_what_the_operator_set(tmp_path):
    broker = BrokerProcess(tmp_path / "data", config={"num_partitions": 4,
                                                      "log_retention_ms": 3600000})
    broker.start()
    try:
        [line] = [line for line in broker.log_text().splitlines() if "effective config" in line]
        shown = json.loads(line[line.index("{"):])
        # the flags the fixture passes (data dir, listen), the two settings, nothing else
        assert shown == {"data_dir": str(tmp_path / "data"), "listen": broker.bootstrap,
                         "num_partitions": 4, "log": {"retention.ms": 3600000}}
        assert len(line) < 500
    finally:
        broker.cleanup()
    debug = BrokerProcess(tmp_path / "data", args=["--log-level", "DEBUG"]).start()
    try:
        assert "effective config, every setting" in debug.log_text()
        assert '"max_frame_bytes": 16777216' in debug.log_text()
    finally:
        debug.cleanup()


def test_a_large_record_names_the_setting_and_the_cli_takes_producer_properties(broker,
                                                                               tmp_path):
    """A record over the producer's request size names max.request.size and how the CLI
    sets it; --producer-property raises it, --consumer-property sets consumer settings."""
    b = ("--bootstrap", broker.bootstrap)
    assert run("tslog", *b, "topics", "create", "big", "--config",
               "max.message.bytes=12000000").returncode == 0
    line = b"a" * 10_000_000 + b"\n"
    error = one_error(run("tslog", *b, "produce", "big", stdin=line))
    assert "10000000 bytes" in error and "max_request_size 8388608" in error
    assert "--producer-property max.request.size=N" in error
    sent = run("tslog", *b, "produce", "big", "--producer-property",
               "max.request.size=12500000", stdin=line)
    assert sent.returncode == 0, sent.stderr
    read = run("tslog", *b, "consume", "big", "--to-time", "now", "--format-string",
               "%o %S\\n", "--consumer-property", "fetch.max.bytes=20000000")
    assert read.stdout == b"0 10000000\n", read.stderr
    typo = run("tslog", *b, "produce", "big", "--producer-property", "max.reqest.size=1",
               stdin=b"x\n")
    assert typo.returncode == 2 and b"max.request.size" in typo.stderr  # the known keys


def test_the_python_producer_names_the_sizes_and_max_message_bytes(broker, caplog):
    with Admin(broker.bootstrap) as admin:
        admin.create_topic("limited")
    with Producer(broker.bootstrap) as producer:  # idempotent by default (acks=all)
        with caplog.at_level(logging.WARNING, logger="tslog"):
            with pytest.raises(MessageTooLargeError) as refused:
                producer.send("limited", b"v" * 2_000_000).get(30)
    with Admin(broker.bootstrap) as admin:
        limit = int(admin.describe_configs("limited")["max.message.bytes"].value)
    message = str(refused.value)
    # The broker's words: the batch's size as it measured it, the setting and its value.
    said = re.search(r"produce to limited-0 refused: a batch of (\d+) bytes is larger "
                     r"than the topic's max\.message\.bytes \((\d+)\)", message)
    assert said is not None and int(said.group(2)) == limit, message
    assert 2_000_000 < int(said.group(1)) < 2_001_000, message  # the value and its framing
    assert refused.value.broker_message == said.group(0).split("refused: ")[1]
    assert not [r for r in caplog.records if "producer id" in r.getMessage()]
