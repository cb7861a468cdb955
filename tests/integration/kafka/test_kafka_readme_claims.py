"""What the README says the Kafka port serves stays true: its list of APIs is exactly what a
real broker's ApiVersions answer advertises (asked by kafka-python, a client tslog did not
write), and its claim that Kafka's consumer groups work holds for kcat ``-G``, whose
commits tslog's own ``groups describe`` then shows."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tslog.client import Producer

README = Path(__file__).resolve().parents[3] / "README.md"


def readme_kafka_apis() -> set[str]:
    section = README.read_text().split("\n## Kafka compatibility\n", 1)[1].split("\n## ", 1)[0]
    listed = re.search(r"advertises in\s+ApiVersions, all of them: (.*?)\.\s", section, re.S)
    assert listed, "the README's list of Kafka APIs moved; keep this test reading it"
    return {name.strip() for name in listed.group(1).replace("\n", " ").split(",")}


def test_the_readme_lists_exactly_the_apis_a_real_broker_advertises(kafka_broker):
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=kafka_broker.kafka, request_timeout_ms=10000)
    try:
        advertised = {key.name for key in admin.api_versions()}
    finally:
        admin.close()
    assert readme_kafka_apis() == advertised
    assert "not served" not in README.read_text().split("\n## Kafka compatibility\n", 1)[1][:2000]


def test_kcat_balanced_consumer_group_reads_and_commits(kafka_broker):
    topic = kafka_broker.topic("kcatgroup", partitions=2)
    with Producer(kafka_broker.bootstrap) as producer:
        for n in range(6):
            producer.send(topic, b"v%d" % n, partition=n % 2)
        producer.flush()
    done = subprocess.run(
        ["kcat", "-b", kafka_broker.kafka, "-G", "kcat-readers", "-X",
         "auto.offset.reset=earliest", "-c", "6", "-f", "%s\\n", topic],
        capture_output=True, text=True, timeout=90)
    assert done.returncode == 0, done.stderr
    assert sorted(done.stdout.split()) == [f"v{n}" for n in range(6)]
    described = subprocess.run(
        [str(Path(sys.executable).parent / "tslog"), "--bootstrap", kafka_broker.bootstrap,
         "groups", "describe", "kcat-readers", "--format", "json"],
        capture_output=True, text=True, timeout=60)
    assert described.returncode == 0, described.stderr
    assert topic in described.stdout
