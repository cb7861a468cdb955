"""The catch-up throttle's token bucket, on a clock the test moves: over any run of reads
the bytes it lets through stay within the rate times the elapsed time, plus one second's
burst, plus one read's overshoot; a read over the quota gets nothing and is counted; rate 0
never holds anything back. Hypothesis drives the read sizes and the time between reads."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tslog.broker.replication.throttle import CatchUpThrottle


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@given(st.integers(1, 10_000_000), st.lists(st.tuples(st.floats(0, 2), st.integers(1, 10**7)),
                                            max_size=200))
def test_bytes_through_stay_within_the_rate(rate, reads):
    clock = Clock()
    throttle = CatchUpThrottle(rate, clock)
    start, largest, sent = clock.now, 0, 0
    for gap, wanted in reads:
        clock.now += gap
        allowance = throttle.allowance()
        assert allowance >= 0
        if allowance == 0:
            continue
        size = min(wanted, allowance) if wanted < allowance else allowance + (wanted % 7)
        largest = max(largest, size)  # a read may overshoot (a whole batch): by one read
        throttle.spent(size)
        sent += size
    assert sent <= rate * (clock.now - start) + rate + largest
    assert throttle.sent_bytes == sent


def test_over_the_quota_a_read_gets_nothing_until_the_bucket_refills():
    clock = Clock()
    throttle = CatchUpThrottle(1000, clock)
    assert throttle.allowance() == 1000
    throttle.spent(1500)  # one batch larger than the allowance
    assert throttle.allowance() == 0 and throttle.held_back == 1
    clock.now += 0.4
    assert throttle.allowance() == 0 and throttle.held_back == 2  # still 100 in debt
    clock.now += 0.2
    assert throttle.allowance() == 100


def test_rate_zero_is_no_limit():
    throttle = CatchUpThrottle(0, Clock())
    for _ in range(3):
        assert throttle.allowance() == -1
        throttle.spent(10**9)
    assert throttle.held_back == 0 and throttle.sent_bytes == 3 * 10**9


@given(st.integers(1, 10_000_000), st.integers(1, 10_000_000),
       st.lists(st.tuples(st.floats(0, 2), st.integers(1, 10**7)), max_size=100))
def test_a_rate_set_at_run_time_bounds_what_follows(first, second, reads):
    """Kafka's dynamic ``leader.replication.throttled.rate``: after ``set_rate`` the bytes
    through stay within the new rate (the bucket keeps at most one second of it)."""
    clock = Clock()
    throttle = CatchUpThrottle(first, clock)
    throttle.spent(first // 2)
    throttle.set_rate(second)
    start, largest, sent = clock.now, 0, 0
    for gap, wanted in reads:
        clock.now += gap
        allowance = throttle.allowance()
        if allowance == 0:
            continue
        size = min(wanted, allowance)
        largest = max(largest, size)
        throttle.spent(size)
        sent += size
    assert sent <= second * (clock.now - start) + second + largest


def test_setting_the_rate_to_zero_lifts_the_limit():
    clock = Clock()
    throttle = CatchUpThrottle(10, clock)
    throttle.spent(1000)
    assert throttle.allowance() == 0
    throttle.set_rate(0)
    assert throttle.allowance() == -1
