"""Protected mode and the connection-limit settings, as the broker's configuration reads them.

Goal: a broker reachable from other hosts with no client authentication does not start unless
the operator says ``allow_anonymous`` (file, environment or flag); loopback stays open; the
limits take 0 for "off" and refuse negatives; docs/security.md shows the real lines.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tslog.broker.__main__ import parse_flags
from tslog.broker.config import BrokerConfig, ConfigError, load_config

@pytest.mark.parametrize("listen", ["127.0.0.1:9092", "127.8.9.10:1", "[::1]:9092",
                                    "localhost:9092"])
def test_loopback_stays_open_without_authentication(listen):
    assert BrokerConfig(listen=listen).allow_anonymous is False


@pytest.mark.parametrize("listen", ["0.0.0.0:9092", "[::]:9092", "10.1.2.3:9092",
                                    "broker-0.tslog:9092"])
def test_any_other_address_needs_allow_anonymous(listen):
    with pytest.raises(ConfigError) as error:
        BrokerConfig(listen=listen)
    [problem] = error.value.problems
    assert problem.startswith(f"protected mode: listen = {listen} accepts clients from other "
                              "hosts")
    assert BrokerConfig(listen=listen, allow_anonymous=True).listen == listen


def test_the_environment_and_the_flag_both_say_allow_anonymous():
    environ = {"TSLOG_LISTEN": "0.0.0.0:9092", "TSLOG_ALLOW_ANONYMOUS": "true"}
    assert load_config({}, None, environ)[0].allow_anonymous
    flags, _, _ = parse_flags(["--listen", "0.0.0.0:9092", "--allow-anonymous"])
    assert load_config(flags, None, {})[0].allow_anonymous
    with pytest.raises(ConfigError, match="protected mode"):
        load_config(parse_flags(["--listen", "0.0.0.0:9092"])[0], None, {})


@pytest.mark.parametrize("name", ["max_connections_per_address",
                                  "max_connections_per_principal",
                                  "max_unauthenticated_connections"])
def test_limits_take_zero_for_off_and_refuse_negatives(name):
    assert getattr(BrokerConfig(**{name: 0}), name) == 0
    with pytest.raises(ConfigError, match=f"{name} must be >= 0"):
        BrokerConfig(**{name: -1})


def test_security_doc_shows_the_lines_the_broker_and_the_cli_really_print():
    from tslog.broker.server.connection_registry import Refusal

    doc = (Path(__file__).resolve().parents[3] / "docs" / "security.md").read_text()
    with pytest.raises(ConfigError) as error:
        BrokerConfig(listen="0.0.0.0:9092")
    assert f"    tslog-broker: {error.value}\n" in doc
    refusal = Refusal("max_connections_per_address", 500, "10.0.0.7")
    assert f"    tslog: error: {refusal.message}\n" in doc
