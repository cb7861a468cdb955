"""/metrics of a real broker configured through ``TSLOG_METRICS_LISTEN``: refusals by reason,
open connections, error codes per API and the time-lookup histograms, as an operator reads
them; and no metrics port at all when the setting is absent."""

from __future__ import annotations

import os
import socket
import struct
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import msgpack
import pytest

from tests.helpers.broker_process import free_port
from tests.helpers.prometheus import parse_samples
from tests.helpers.wire import Wire, batch, raw_frame
from tslog.protocol.errors import ErrorCode
from tslog.protocol.messages import ApiKey

pytestmark = pytest.mark.timeout(60)


def scrape(port: int) -> dict[str, float]:
    """{sample line's name and labels: value} of one scrape."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        return parse_samples(response.read().decode())


def test_refusals_connections_and_errors_are_counted(broker_factory):
    port = free_port()
    broker = broker_factory(env={"TSLOG_METRICS_LISTEN": f"127.0.0.1:{port}"})
    before = scrape(port)
    for reason in ("bad_frame", "oversize_frame", "unknown_api", "invalid_request",
                   "too_many_connections", "idle_timeout"):
        assert before[f'tslog_refused_requests_total{{reason="{reason}"}}'] == 0
    with Wire(broker.host, broker.port) as wire:
        wire.send_raw(raw_frame(b"\xc1\xc1 not msgpack"))
        assert wire.is_closed_by_peer()
    with Wire(broker.host, broker.port) as wire:
        wire.send_raw(struct.pack(">I", 16 * 1024 * 1024 + 1) + b"\x00" * 100)
        assert wire.is_closed_by_peer()
    with Wire(broker.host, broker.port) as wire:
        wire.send_raw(raw_frame(msgpack.packb([999, 0, 1, "bad", {}])))
        wire.send_raw(raw_frame(msgpack.packb([int(ApiKey.METADATA), 0, 2, "bad",
                                                {"topics": 7}])))
        assert wire.read_frame() is not None and wire.read_frame() is not None  # answered
        assert wire.create_topic("t") == 0
        assert wire.produce("missing", 0, batch([b"x"]))["error_code"] != 0
        assert wire.list_offset("t", 0, 0)["error_code"] == 0  # a lookup by time
        assert wire.fetch("t", 0, 0)["error_code"] == 0
        wire.request(ApiKey.FETCH, {  # a follower's fetch, counted apart from consumers'
            "replica_id": 1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1024, "topics": [
                {"topic": "t", "partitions": [
                    {"partition": 0, "fetch_offset": 0, "max_bytes": 1024}]}]})
        idle = socket.create_connection((broker.host, broker.port))
        try:
            deadline = time.monotonic() + 10
            while True:  # the readiness probe's connection may still be closing
                during = scrape(port)
                if during["tslog_open_connections"] == 2 or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
        finally:
            idle.close()
    assert during["tslog_open_connections"] == 2
    refused = 'tslog_refused_requests_total{reason="%s"}'
    assert during[refused % "bad_frame"] == 1
    assert during[refused % "oversize_frame"] == 1
    assert during[refused % "unknown_api"] == 1
    assert during[refused % "invalid_request"] == 1
    assert during['tslog_request_errors_total{api="produce",error="unknown_topic_or_partition"}'] == 1
    assert during['tslog_requests_total{api="create_topics"}'] == 1
    assert during['tslog_requests_total{api="fetch"}'] == 1
    assert during['tslog_requests_total{api="fetch_follower"}'] == 1
    assert during["tslog_time_lookup_duration_seconds_count"] == 1
    assert during["tslog_time_lookup_scanned_bytes_count"] == 1
    assert during["tslog_data_dir_capacity_bytes"] > during["tslog_data_dir_available_bytes"] > 0


def test_no_metrics_port_unless_configured(broker):
    """Off by default: the broker process listens on its client port and nothing else."""
    with Wire(broker.host, broker.port) as wire:
        assert wire.api_versions()["error_code"] == 0
    assert listening_ports(broker.process.pid) == {broker.port}


def listening_ports(pid: int) -> set[int]:
    """TCP ports in LISTEN state on sockets the process ``pid`` holds open."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as rows:
            next(rows)
            for row in rows:
                fields = row.split()
                if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                    ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def test_recovery_reports_the_torn_tail_it_cut(broker_factory):
    """A crash leaves garbage after the last batch; the restarted broker cuts it off and
    says how many bytes it cut (and that recovery took time) on /metrics."""
    port = free_port()
    broker = broker_factory(args=["--metrics-listen", f"127.0.0.1:{port}"])
    with Wire(broker.host, broker.port) as wire:
        assert wire.create_topic("crashy") == 0
        assert wire.produce("crashy", 0, batch([b"kept"] * 10))["error_code"] == 0
    assert scrape(port)["tslog_recovery_truncated_bytes"] == 0
    broker.kill()
    segment = broker.data_dir / "crashy-0" / ("0" * 20 + ".log")
    with open(segment, "ab") as log_file:
        log_file.write(b"\x00torn write" * 7)  # 77 bytes that are no batch
    broker.restart()
    after = scrape(port)
    assert after["tslog_recovery_truncated_bytes"] == 77
    assert after["tslog_recovery_duration_seconds"] > 0
    with Wire(broker.host, broker.port) as wire:
        assert wire.log_end_offset("crashy") == 10


def test_bad_http_on_the_metrics_port_is_refused_and_scrapes_go_on(broker_factory):
    port = free_port()
    broker = broker_factory(args=["--metrics-listen", f"127.0.0.1:{port}"])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"GET /metrics and \xff garbage HTTP/1.1\r\n\r\n")
        assert sock.recv(65536).split(b"\r\n", 1)[0].split()[1] == b"400"
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")  # and hang up without reading
    with socket.create_connection(("127.0.0.1", port), timeout=10):
        pass  # connect, say nothing, leave
    assert scrape(port)["tslog_open_connections"] >= 0
    assert "Traceback" not in broker.log_text()


def test_connection_limit_and_idle_timeout_refusals_are_counted(broker_factory):
    port = free_port()
    broker = broker_factory(env={"TSLOG_METRICS_LISTEN": f"127.0.0.1:{port}",
                                 "TSLOG_MAX_CONNECTIONS": "2",
                                 "TSLOG_CONNECTIONS_MAX_IDLE_MS": "300"})
    refused = 'tslog_refused_requests_total{reason="%s"}'
    deadline = time.monotonic() + 10
    while scrape(port)["tslog_open_connections"] and time.monotonic() < deadline:
        time.sleep(0.05)  # the readiness probe's connection closes
    with Wire(broker.host, broker.port) as first, Wire(broker.host, broker.port) as second:
        assert first.api_versions()["error_code"] == 0
        assert second.api_versions()["error_code"] == 0
        with Wire(broker.host, broker.port) as third:  # told why, then closed
            refusal = third.api_versions()
            assert refusal["error_code"] == ErrorCode.TOO_MANY_CONNECTIONS
            assert "max_connections = 2" in refusal["error_message"]
            assert third.is_closed_by_peer()
        assert scrape(port)[refused % "too_many_connections"] == 1
        assert first.is_closed_by_peer() and second.is_closed_by_peer()  # idle for 300 ms
    samples = scrape(port)
    assert samples[refused % "idle_timeout"] == 2
    assert samples["tslog_open_connections"] == 0


def test_a_metrics_port_in_use_stops_the_broker_with_one_clear_line(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "tslog.broker", "--data-dir", str(tmp_path / "data"),
             "--listen", f"127.0.0.1:{free_port()}", "--metrics-listen", f"127.0.0.1:{port}"],
            capture_output=True, text=True, timeout=60,
            env={k: v for k, v in os.environ.items() if not k.startswith("TSLOG_")})
    assert result.returncode == 1
    assert (f"could not start: cannot listen on 127.0.0.1:{port} (--metrics-listen): "
            "address already in use" in result.stderr)
    assert "Traceback" not in result.stderr and "Warning" not in result.stderr
    assert (tmp_path / "data").exists()  # the logs were opened, then closed cleanly
