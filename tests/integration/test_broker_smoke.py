"""The broker daemon starts, answers, and stops cleanly: the fixture every other test uses."""

from tests.helpers.broker_process import probe
from tests.helpers.wire import Wire, batch, split_values


def test_broker_answers_api_versions_and_round_trips_records(broker):
    with Wire(broker.host, broker.port) as wire:
        assert wire.api_versions()["error_code"] == 0
        assert wire.create_topic("events") == 0
        produced = wire.produce("events", 0, batch([b"one", b"two"]))
        assert produced["error_code"] == 0 and produced["base_offset"] == 0
        fetched = wire.fetch("events", 0, 0)
        assert split_values(fetched["records"]) == [(0, b"one"), (1, b"two")]
        assert fetched["high_watermark"] == 2
    broker.terminate()
    assert not probe(broker.host, broker.port)


def test_broker_starts_with_no_arguments_on_the_default_address(tmp_path):
    """`tslog-broker` with no flags uses ./tslog-data and 127.0.0.1:9092."""
    import subprocess
    import sys

    from tslog.broker.__main__ import parse_flags
    from tslog.broker.config import load_config

    flags, config_path, _ = parse_flags([])
    config, _ = load_config(flags, config_path, {})
    assert (config.data_dir, config.listen) == ("./tslog-data", "127.0.0.1:9092")
    result = subprocess.run([sys.executable, "-m", "tslog.broker", "--help"],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 0 and "--data-dir" in result.stdout


def test_sigint_also_stops_cleanly(broker):
    import signal

    broker.process.send_signal(signal.SIGINT)
    assert broker.process.wait(30) == 0


def test_config_file_and_environment_reach_the_running_broker(broker_factory, tmp_path):
    from tslog.protocol.messages import ApiKey

    config = tmp_path / "broker.toml"
    config.write_text('num_partitions = 3\n[log]\n"retention.ms" = 3600000\n')
    broker = broker_factory(args=["--config", str(config)],
                            env={"TSLOG_LOG_SEGMENT_BYTES": "1048576"})
    with Wire(broker.host, broker.port) as wire:
        assert wire.create_topic("events", partitions=-1) == 0
        metadata = wire.request(ApiKey.METADATA, {"topics": ["events"]})
        assert len(metadata["topics"][0]["partitions"]) == 3
        described = wire.request(ApiKey.DESCRIBE_CONFIGS,
                                 {"resources": [{"type": "topic", "name": "events"}]})
        configs = {c["name"]: (c["value"], c["source"])
                   for c in described["resources"][0]["configs"]}
        assert configs["retention.ms"] == ("3600000", "broker")
        assert configs["segment.bytes"] == ("1048576", "broker")
    assert "effective config" in broker.log_text()


def test_bad_config_exits_2_listing_every_problem(tmp_path):
    import subprocess
    import sys

    config = tmp_path / "broker.toml"
    config.write_text('listen = "nowhere"\nmystery = 1\n')
    result = subprocess.run([sys.executable, "-m", "tslog.broker", "--config", str(config),
                             "--data-dir", str(tmp_path / "data")],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 2
    assert "mystery" in result.stderr and "listen" in result.stderr


def test_port_in_use_exits_1_with_one_error_line(broker, tmp_path):
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-m", "tslog.broker", "--listen", broker.bootstrap,
                             "--data-dir", str(tmp_path / "other")],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 1
    errors = [line for line in result.stderr.splitlines() if " ERROR " in line]
    assert len(errors) == 1
    assert (f"could not start: cannot listen on {broker.bootstrap} (--listen): address already "
            "in use; another program (or broker) is listening there" in errors[0])
    assert "Traceback" not in result.stderr and "Warning" not in result.stderr


def test_pipelined_requests_are_answered_in_request_order(broker):
    from tslog.protocol.messages import ApiKey

    with Wire(broker.host, broker.port) as wire:
        assert wire.create_topic("events") == 0
        sent = []
        for i in range(200):
            body = {"acks": -1 if i % 3 else 1, "timeout_ms": 10_000, "topics": [
                {"topic": "events", "partitions": [{"partition": 0,
                                                    "records": batch([b"%d" % i])}]}]}
            sent.append(wire.send(ApiKey.PRODUCE, body))
        sent.append(wire.send(ApiKey.API_VERSIONS, {}))
        received = []
        for correlation_id in sent[:-1]:
            got, body = wire.receive(ApiKey.PRODUCE)
            received.append(got)
            assert body["topics"][0]["partitions"][0]["base_offset"] == len(received) - 1
        assert wire.receive(ApiKey.API_VERSIONS)[0] == sent[-1]
        assert received == sent[:-1]


def test_half_closed_client_still_gets_its_answers(broker):
    import socket

    from tslog.protocol.messages import ApiKey

    with Wire(broker.host, broker.port) as wire:
        assert wire.create_topic("events") == 0
        body = {"acks": -1, "timeout_ms": 10_000, "topics": [
            {"topic": "events", "partitions": [{"partition": 0, "records": batch([b"x"])}]}]}
        first = wire.send(ApiKey.PRODUCE, body)
        second = wire.send(ApiKey.PRODUCE, body)
        wire.sock.shutdown(socket.SHUT_WR)
        assert wire.receive(ApiKey.PRODUCE)[0] == first
        assert wire.receive(ApiKey.PRODUCE)[0] == second
        assert wire.is_closed_by_peer()
