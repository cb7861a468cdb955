"""Consumer-group settings of the broker: read from file, environment and defaults, refused
with every problem named when they cannot work, and handed to the coordinator as given."""

import pytest

from tslog.broker.config import BrokerConfig, ConfigError, load_config
from tslog.broker.groups import CoordinatorConfig


def load(toml=None, env=None, tmp_path=None):
    path = None
    if toml is not None:
        path = tmp_path / "broker.toml"
        path.write_text(toml)
    return load_config({}, str(path) if path else None, env or {})[0]


def test_defaults_are_kafkas_consumer_protocol_defaults():
    assert load().coordinator_config == CoordinatorConfig(
        session_timeout_ms=45_000, heartbeat_interval_ms=5_000, rebalance_timeout_ms=300_000,
        assignor="uniform", group_size_max=1_000)


def test_settings_from_the_file_and_the_environment_reach_the_coordinator(tmp_path):
    toml = 'group_session_timeout_ms = 1000\ngroup_assignor = "range"\n'
    env = {"TSLOG_GROUP_HEARTBEAT_INTERVAL_MS": "200", "TSLOG_GROUP_MAX_SIZE": "3",
           "TSLOG_GROUP_REBALANCE_TIMEOUT_MS": "9000"}
    assert load(toml, env, tmp_path).coordinator_config == CoordinatorConfig(
        session_timeout_ms=1000, heartbeat_interval_ms=200, rebalance_timeout_ms=9000,
        assignor="range", group_size_max=3)


def test_a_heartbeat_interval_not_below_the_session_timeout_is_refused():
    with pytest.raises(ConfigError, match="group_heartbeat_interval_ms \\(2000\\) must be "
                                          "less than group_session_timeout_ms \\(2000\\)"):
        load(env={"TSLOG_GROUP_SESSION_TIMEOUT_MS": "2000",
                  "TSLOG_GROUP_HEARTBEAT_INTERVAL_MS": "2000"})


def test_an_unknown_assignor_is_refused_naming_the_known_ones():
    with pytest.raises(ConfigError, match="group_assignor must be one of range, uniform, "
                                          "got 'roundrobin'"):
        load(env={"TSLOG_GROUP_ASSIGNOR": "roundrobin"})


def test_zero_and_negative_values_are_all_reported_together():
    with pytest.raises(ConfigError) as info:
        BrokerConfig(group_session_timeout_ms=0, group_heartbeat_interval_ms=-1,
                     group_rebalance_timeout_ms=0, group_max_size=0)
    text = str(info.value)
    for name in ("group_session_timeout_ms", "group_heartbeat_interval_ms",
                 "group_rebalance_timeout_ms", "group_max_size"):
        assert f"{name} must be > 0" in text


def test_a_non_integer_timeout_is_a_config_error_not_a_crash():
    with pytest.raises(ConfigError, match="group_session_timeout_ms must be an integer"):
        load(env={"TSLOG_GROUP_SESSION_TIMEOUT_MS": "1s"})
