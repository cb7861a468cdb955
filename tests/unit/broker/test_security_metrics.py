"""The security counters' label sets stay bounded whatever clients do."""

from __future__ import annotations

from tslog.broker.metrics import security_metrics
from tslog.broker.metrics.definitions import DENIED_REQUESTS
from tslog.protocol.messages import ApiKey


def test_principals_past_the_cap_share_one_series():
    for i in range(security_metrics.MAX_PRINCIPAL_LABELS + 50):
        security_metrics.denied(f"User:flood-{i}", ApiKey.METADATA)
    principals = {key[0] for key in DENIED_REQUESTS.children}
    assert len(principals) <= security_metrics.MAX_PRINCIPAL_LABELS + 1
    assert ("other", "metadata") in DENIED_REQUESTS.children
