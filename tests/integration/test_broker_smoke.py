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
