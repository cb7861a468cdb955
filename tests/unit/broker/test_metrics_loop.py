"""The lock-free loop-owned counters and histograms, as a scrape shows them."""

from __future__ import annotations

import pytest

from tests.helpers.prometheus import parse_samples
from tslog.broker.metrics.loop_metrics import LoopCounter, LoopHistogram


def scrape(*families) -> dict[str, float]:
    lines: list[str] = []
    for family in families:
        family.render(lines)
    return parse_samples("".join(lines))


def test_histogram_buckets_are_cumulative_and_inclusive_of_their_bound():
    histogram = LoopHistogram("t_seconds", "test", ("api",), (0.1, 1.0, 10.0))
    child = histogram.labels("produce")
    for value in (0.05, 0.1, 0.5, 1.0, 3.0, 99.0):
        child.observe(value)
    samples = scrape(histogram)
    bucket = 't_seconds_bucket{api="produce",le="%s"}'
    assert [samples[bucket % le] for le in ("0.1", "1.0", "10.0", "+Inf")] == [2, 4, 5, 6]
    assert samples['t_seconds_count{api="produce"}'] == 6
    assert samples['t_seconds_sum{api="produce"}'] == pytest.approx(103.65)


def test_counters_with_and_without_labels_and_removal():
    plain = LoopCounter("t_events_total", "test")
    plain.inc()
    plain.inc(2.5)
    per_topic = LoopCounter("t_records_total", "test", ("topic",))
    per_topic.labels("a").inc(3)
    per_topic.labels("b").inc(1)
    per_topic.remove("b")
    samples = scrape(plain, per_topic)
    assert samples["t_events_total"] == 3.5
    assert samples['t_records_total{topic="a"}'] == 3
    assert 't_records_total{topic="b"}' not in samples


def test_label_values_are_escaped():
    counter = LoopCounter("t_groups_total", "test", ("group",))
    counter.labels('a "quoted"\\group\nname').inc()
    lines: list[str] = []
    counter.render(lines)
    assert lines[-1] == 't_groups_total{group="a \\"quoted\\"\\\\group\\nname"} 1.0\n'


def test_wrong_number_of_labels_is_refused():
    counter = LoopCounter("t_x_total", "test", ("api", "error"))
    with pytest.raises(ValueError):
        counter.labels("produce")
