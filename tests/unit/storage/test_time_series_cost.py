"""The Python work of many times in one partition (OffsetsAtTimes, a console chart's bucket
edges) grows with the lookups it makes, not with the times asked: a day by minute is 1,441
edges of every partition, and most of them share an answer with their neighbour."""

from tests.helpers.python_calls import calls_by_name
from tests.helpers.storage import START_MS, make_batch, open_log
from tslog.broker.storage import ManualClock
from tslog.broker.storage.time_series import answer_runs, offsets_for_times


def test_times_sharing_an_answer_cost_no_python_call_each(tmp_path):
    clock = ManualClock(START_MS)
    with open_log(tmp_path / "t-0", clock) as log:
        for _ in range(10):
            log.append(make_batch(3))
            clock.advance(1)
        offsets_for_times(log, [START_MS])  # warm: the index maps, what the segment learns
        counted = {}
        for edges in (61, 1441):  # half before the first record, half after the last
            times = ([START_MS - 60_000 + i for i in range(edges // 2)]
                     + [START_MS + 60_000 + i for i in range(edges - edges // 2)])
            runs, lookups = answer_runs(log, times)
            assert lookups == 2 and [covered for covered, _ in runs] == [edges // 2,
                                                                          edges - edges // 2]
            calls, (answers, _) = calls_by_name(lambda: offsets_for_times(log, times))
            assert answers == [(0, START_MS)] * (edges // 2) + [None] * (edges - edges // 2)
            counted[edges] = calls["python"]
        assert counted[61] == counted[1441], counted
