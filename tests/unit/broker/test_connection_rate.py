"""The per-address token bucket of new connections (``security/connection_rate.py``)."""

from __future__ import annotations

from tslog.broker.security import connection_rate
from tslog.broker.security.connection_rate import ConnectionRate


def test_a_burst_of_rate_then_one_per_refill_per_address():
    rate = ConnectionRate(5)
    assert [rate.allow("10.0.0.1", 0.0) for _ in range(6)] == [True] * 5 + [False]
    assert rate.allow("10.0.0.2", 0.0)  # another address: its own bucket
    assert not rate.allow("10.0.0.1", 0.1)  # half a token back
    assert rate.allow("10.0.0.1", 0.25)  # one whole token refilled
    assert not rate.allow("10.0.0.1", 0.25)


def test_zero_is_no_limit():
    rate = ConnectionRate(0)
    assert all(rate.allow("10.0.0.1", 0.0) for _ in range(10_000))


def test_memory_is_bounded_by_forgetting_refilled_buckets(monkeypatch):
    monkeypatch.setattr(connection_rate, "MAX_ADDRESSES", 8)
    rate = ConnectionRate(2)
    for i in range(100):
        assert rate.allow(f"10.0.{i}.1", float(i))  # each refilled by the next one's turn
    assert len(rate) <= 8
    assert [rate.allow("10.0.99.1", 99.0) for _ in range(2)] == [True, False]
