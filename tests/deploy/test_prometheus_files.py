"""deploy/prometheus/ passes Prometheus' own checks (the real promtool, from Debian's
prometheus package): the scrape config with its rule file, the alerting rules, and the rules'
unit tests in alerts-test.yml, which show each alert firing on the series it is about and not
before its ``for`` has passed.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.deploy.deployfiles import DEPLOY, yaml_documents

PROMETHEUS = DEPLOY / "prometheus"


def promtool(*args: str) -> str:
    assert shutil.which("promtool"), "promtool missing: .ci/run installs Debian's prometheus"
    result = subprocess.run(["promtool", *args], cwd=PROMETHEUS, capture_output=True,
                            timeout=120)
    output = result.stdout.decode() + result.stderr.decode()
    assert result.returncode == 0, output
    return output


@pytest.mark.parametrize("config", ["prometheus.yml", "prometheus-secured.yml",
                                    "../cluster/prometheus.yml"])
def test_scrape_configs_are_valid_and_load_the_alert_rules(config):
    output = promtool("check", "config", config)
    assert "SUCCESS: 1 rule files found" in output and "SUCCESS: 4 rules found" in output


def test_alert_rules_are_valid():
    output = promtool("check", "rules", "alerts.yml")
    assert "SUCCESS: 4 rules found" in output


def test_alerts_fire_on_their_conditions_and_only_after_their_hold_time():
    promtool("test", "rules", "alerts-test.yml")


def test_alerts_cover_the_four_operator_concerns_and_each_has_a_unit_test():
    rules = {rule["alert"]: rule for group in yaml_documents(PROMETHEUS / "alerts.yml")[0]
             ["groups"] for rule in group["rules"]}
    assert set(rules) == {"TslogBrokerDown", "TslogUnderReplicatedPartitions",
                          "TslogConsumerLagHigh", "TslogDiskNearlyFull"}
    tested = {case["alertname"] for test in yaml_documents(PROMETHEUS / "alerts-test.yml")[0]
              ["tests"] for case in test["alert_rule_test"]}
    assert tested == set(rules)
