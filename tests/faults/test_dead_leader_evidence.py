"""A leader's dead process is acted on at once at default settings, a live one never is.

With the default ``broker_session_timeout_ms`` (10 s), a SIGKILLed leader's followers see
their fetch connection close and the leader's port refuse; a broker confirms that with
probes of its own and revokes the dead broker's etcd lease, so the controller elects a new
leader without waiting out the session. Shown by counting, not timing: the surviving
brokers logged that they ended the session, and the new leader took over in the next epoch.
A paused leader (SIGSTOP; its kernel still accepts connections) is not taken for dead:
after a pause of 0.4 of the session it still leads in the same epoch, and no broker logged
a revocation.
"""

from __future__ import annotations

import time

import pytest

from tests.faults import net
from tests.faults.cluster import FaultCluster, wait_until
from tslog.client import Admin, Producer

pytestmark = [pytest.mark.faults, pytest.mark.slow, pytest.mark.timeout(300),
              pytest.mark.skipif(net.available() is not None, reason=str(net.available()))]

REVOKED = "ending its etcd session now"
DEFAULT_SESSION_S = 10.0


@pytest.fixture
def cluster(tmp_path):
    started = FaultCluster(tmp_path)  # the broker's default settings
    try:
        yield started.start()
    finally:
        started.close()


def _full_isr(cluster):
    return wait_until(lambda: (p := cluster.describe("t")).leader >= 0 and len(p.isr) == 3
                      and p, 60, "a full ISR")


def _revocations(cluster) -> int:
    return sum(b.log_text().count(REVOKED) for b in cluster.brokers)


def test_killed_leader_session_ends_early_and_a_pause_is_not_death(cluster):
    with Admin(cluster.bootstrap) as admin:
        admin.create_topic("t", partitions=1, replication_factor=3)
    before = _full_isr(cluster)
    cluster.pause(before.leader)
    time.sleep(0.4 * DEFAULT_SESSION_S)
    cluster.resume(before.leader)
    assert _full_isr(cluster).leader_epoch == before.leader_epoch
    assert _revocations(cluster) == 0
    cluster.kill(before.leader)
    with Producer(cluster.live_bootstrap(), acks="all", enable_idempotence=True) as producer:
        producer.send("t", b"after").get(60)
    after = cluster.describe("t")
    assert after.leader != before.leader and after.leader_epoch == before.leader_epoch + 1
    assert _revocations(cluster) >= 1, cluster.logs()
