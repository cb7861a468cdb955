"""BrokerConfig layering and validation: what an operator sees when starting tslog-broker."""

import pytest

from tslog.broker.__main__ import main, parse_flags
from tslog.broker.config import BrokerConfig, ConfigError, load_config


def load(argv=(), toml=None, env=None, tmp_path=None):
    flags, path, _ = parse_flags(list(argv))
    if toml is not None:
        path = tmp_path / "broker.toml"
        path.write_text(toml)
    return load_config(flags, str(path) if path else None, env or {})[0]


def test_no_arguments_gives_the_documented_defaults():
    config = load()
    assert config.data_dir == "./tslog-data"
    assert config.listen == "127.0.0.1:9092"
    assert config.metrics_listen is None
    assert config.node_id == 0
    assert config.max_frame_bytes == 16 * 1024 * 1024
    assert config.num_partitions == 1
    assert config.log_config.retention_ms == 7 * 24 * 3600 * 1000


def test_layers_file_then_environment_then_flags(tmp_path):
    toml = 'listen = "127.0.0.1:1111"\nnode_id = 3\ndata_dir = "/file"\n[log]\n"retention.ms" = 5000\n'
    env = {"TSLOG_LISTEN": "127.0.0.1:2222", "TSLOG_DATA_DIR": "/env",
           "TSLOG_LOG_SEGMENT_BYTES": "4096"}
    config = load(["--data-dir", "/flag"], toml=toml, env=env, tmp_path=tmp_path)
    assert config.data_dir == "/flag"          # flag beats env and file
    assert config.listen == "127.0.0.1:2222"   # env beats file
    assert config.node_id == 3                 # file beats default
    assert config.log_config.retention_ms == 5000
    assert config.log_config.segment_bytes == 4096


def test_flags_not_passed_do_not_override_the_file(tmp_path):
    config = load([], toml='listen = "127.0.0.1:1111"\n', tmp_path=tmp_path)
    assert config.listen == "127.0.0.1:1111"


def test_every_problem_is_listed_in_one_error(tmp_path):
    toml = 'bogus = 1\nmax_connections = 0\nlisten = "nowhere"\n[log]\n"retention.mss" = 1\n'
    with pytest.raises(ConfigError) as info:
        load(toml=toml, env={"TSLOG_NODE_ID": "x"}, tmp_path=tmp_path)
    text = str(info.value)
    assert "bogus" in text and "node_id" in text and "retention.mss" in text


def test_value_errors_are_listed_together():
    with pytest.raises(ConfigError) as info:
        BrokerConfig(max_connections=0, listen="nowhere", node_id=-1)
    assert len(info.value.problems) == 3


def test_unknown_log_environment_variable_is_rejected():
    with pytest.raises(ConfigError, match="retention.mss"):
        load(env={"TSLOG_LOG_RETENTION_MSS": "1"})


def test_client_environment_variables_are_ignored_not_fatal():
    flags, path, _ = parse_flags([])
    config, ignored = load_config(flags, path, {"TSLOG_BOOTSTRAP": "h:1", "HOME": "/x"})
    assert ignored == ["TSLOG_BOOTSTRAP"] and config.listen == "127.0.0.1:9092"


def test_test_clock_offset_comes_from_the_environment():
    assert load(env={"TSLOG_TEST_CLOCK_OFFSET_MS": "-60000"}).test_clock_offset_ms == -60000


def test_metrics_listen_flag_is_accepted_and_stored():
    assert load(["--metrics-listen", "127.0.0.1:9093"]).metrics_listen == "127.0.0.1:9093"


def test_missing_config_file_is_a_config_error(tmp_path):
    flags, _, _ = parse_flags([])
    with pytest.raises(ConfigError, match="cannot read config file"):
        load_config(flags, str(tmp_path / "missing.toml"), {})


def test_invalid_toml_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="not valid TOML"):
        load(toml="listen = ", tmp_path=tmp_path)


def test_main_exits_2_on_a_bad_config(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TSLOG_MAX_CONNECTIONS", "-5")
    assert main(["--data-dir", str(tmp_path)]) == 2
    assert "max_connections" in capsys.readouterr().err


def test_describe_lists_effective_log_settings():
    described = BrokerConfig(log={"retention.ms": 10}).describe()
    assert described["log"]["retention.ms"] == 10
    assert described["log"]["segment.bytes"] == 1 << 30


def test_broker_fields_starting_with_log_are_not_mistaken_for_topic_defaults():
    config = load(env={"TSLOG_LOG_RETENTION_CHECK_INTERVAL_MS": "1000",
                       "TSLOG_LOG_CHECKPOINT_INTERVAL_MS": "2000",
                       "TSLOG_LOG_MESSAGE_TIMESTAMP_AFTER_MAX_MS": "5"})
    assert config.log_retention_check_interval_ms == 1000
    assert config.log_checkpoint_interval_ms == 2000
    assert config.log_config.message_timestamp_after_max_ms == 5


def test_cluster_settings_default_to_single_node():
    config = load()
    assert config.etcd_endpoints == "" and not config.clustered
    assert config.cluster_name == "tslog"
    assert config.broker_session_timeout_ms == 10_000
    assert config.unclean_leader_election_enable is False


def test_cluster_settings_from_environment_and_file(tmp_path):
    env = {"TSLOG_ETCD_ENDPOINTS": "127.0.0.1:2379,127.0.0.1:22379",
           "TSLOG_BROKER_SESSION_TIMEOUT_MS": "2000",
           "TSLOG_UNCLEAN_LEADER_ELECTION_ENABLE": "true"}
    config = load(toml='cluster_name = "prod-eu"\n', env=env, tmp_path=tmp_path)
    assert config.etcd_addresses == [("127.0.0.1", 2379), ("127.0.0.1", 22379)]
    assert config.clustered and config.cluster_name == "prod-eu"
    assert config.broker_session_timeout_ms == 2000
    assert config.unclean_leader_election_enable is True


def test_bad_cluster_settings_are_all_reported():
    env = {"TSLOG_ETCD_ENDPOINTS": "etcd-a:2379,etcd-b:2379", "TSLOG_CLUSTER_NAME": "a/b",
           "TSLOG_LISTEN": "127.0.0.1:0", "TSLOG_BROKER_SESSION_TIMEOUT_MS": "0"}
    with pytest.raises(ConfigError) as error:
        load(env=env)
    text = str(error.value)
    assert "cluster_name" in text
    assert "each host must be an IP address" in text
    assert "fixed listen port" in text
    assert "broker_session_timeout_ms must be > 0" in text
    with pytest.raises(ConfigError, match="true or false"):
        load(env={"TSLOG_UNCLEAN_LEADER_ELECTION_ENABLE": "maybe"})
    with pytest.raises(ConfigError, match="etcd_endpoints"):
        load(env={"TSLOG_ETCD_ENDPOINTS": "no-port"})


def test_idle_polling_is_bounded_and_can_be_turned_off():
    assert load(env={"TSLOG_IDLE_POLL_US": "0"}).idle_poll_us == 0
    for bad in ("-1", "10001"):
        with pytest.raises(ConfigError, match="idle_poll_us must be 0 \\(off\\) to 10000"):
            load(env={"TSLOG_IDLE_POLL_US": bad})
