"""Two checkouts' brokers and clients, measured in turns in one invocation: after/before.

    python bench/before_after.py --broker before=/tmp/old/.venv/bin/python
    python bench/before_after.py --broker before=PY1 --broker after=PY2 --rounds 7

Why: on a shared 2-core VM the same figure moves 10-30 % between invocations a few minutes
apart (``bench/broker.py`` run on two commits in turn showed even its Redis and echo-floor
rows, identical code, 10-20 % apart). Here both brokers run at once, each on its own data
dir and port, and every row is measured on one, then the other, in an order that flips each
round; the table gives each row's median of the per-round ratios, so drift that lasts longer
than one row's pair cancels out.

Rows: the broker's own (pre-encoded Produce batches with acks=1 and acks=all, a raw Fetch
loop, raw ListOffsets round trips), measured from this process with this checkout's wire
helpers; and the client's (``send``, ``send_batch``, ``poll``, ``poll_batches``,
``offsets_for_times``), run as ``bench/broker_bench/client_rows.py`` under each checkout's
own interpreter, so each broker is driven by its own client, as its users drive it. A
``--broker`` is LABEL=PYTHON: any interpreter whose ``tslog`` is the checkout to measure
(e.g. a venv over an older worktree); the default "after" is this interpreter. The acks=all
client rows run three ways: each client's default (an idempotent producer from 75149b2 on,
a plain one before), both plain, both idempotent. Asserts nothing; prints the table and
the figures of every round.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.broker_bench.common import (  # noqa: E402
    BATCH_RECORDS,
    connect,
    create_topic,
    percentile,
    print_table,
)
from bench.broker_bench.consume import fetch_raw  # noqa: E402
from bench.broker_bench.lookups import RawLookups  # noqa: E402
from bench.broker_bench.produce import produce_raw  # noqa: E402
from tests.helpers.broker_process import BrokerProcess  # noqa: E402

CLIENT_ROWS = ROOT / "bench" / "broker_bench" / "client_rows.py"


class Checkout:
    """One side: its interpreter and a broker started with it (``BrokerProcess``, which the
    tests use, run by that interpreter)."""

    def __init__(self, label: str, python: str, root: Path) -> None:
        self.label, self.python = label, python
        self.broker = BrokerProcess(root / f"{label}-data", python=python)
        self.port, self.bootstrap = self.broker.port, self.broker.bootstrap
        self.broker.start()
        self.topics = 0

    def new_topic(self) -> str:
        self.topics += 1
        topic = f"ab-{self.topics}"
        with connect(self.port) as raw:
            create_topic(raw, topic)
        return topic

    def client(self, row: str, topic: str, *args) -> float | list:
        """A client row under this checkout's interpreter (its own ``tslog.client``)."""
        done = subprocess.run([self.python, str(CLIENT_ROWS), row, self.bootstrap, topic,
                               *map(str, args)], capture_output=True, text=True, timeout=300,
                              cwd=tempfile.gettempdir())
        if done.returncode:
            raise RuntimeError(f"{self.label} {row}: {done.stderr.strip()[-2000:]}")
        return json.loads(done.stdout)

    def stop(self) -> None:
        self.broker.stop()


class Filled:
    """A partition of ``batches`` x 1000 records on one side, for the read rows."""

    def __init__(self, side: Checkout, batches: int) -> None:
        self.topic = side.new_topic()
        _, times = produce_raw(side.port, self.topic, batches, acks=1, window=8)
        self.times = times
        self.end_offset = batches * BATCH_RECORDS


def rows(args) -> list[tuple[str, str, bool, object]]:
    """(name, unit, higher is better, measure(side, filled) -> figure)."""
    batches, records, lookups = args.batches, args.records, args.lookups

    def produce(acks):
        return lambda side, filled: batches * BATCH_RECORDS / produce_raw(
            side.port, side.new_topic(), batches, acks, window=8)[0]

    def fetch(side, filled):
        elapsed, _, count = fetch_raw(side.port, filled.topic, 0, filled.end_offset, 1 << 20)
        return count / elapsed

    def raw_lookups(fraction):
        def measure(side, filled):
            targets = random.Random(7).choices(filled.times, k=lookups)
            lookup = RawLookups(side.port, filled.topic)
            try:
                latencies, wrong = lookup.run(targets)
            finally:
                lookup.close()
            if wrong:
                raise RuntimeError(f"{side.label}: {wrong} wrong lookups")
            return percentile(sorted(latencies), fraction)
        return measure

    def client_lookups(fraction):
        def measure(side, filled):
            targets = random.Random(7).choices(filled.times, k=lookups)
            return percentile(sorted(side.client("offsets_for_times", filled.topic, *targets)),
                              fraction)
        return measure

    def client(row, *extra):
        return lambda side, filled: side.client(row, side.new_topic(), *extra)

    def acks_all_rows(name, row, count):
        # Each checkout's default, then both plain, then both idempotent: the default
        # changed (idempotent with acks=all since 75149b2), so the default row alone
        # compares two different producers.
        return [(f"{name}, acks=all{label}", "records/s", True,
                 client(row, "all", count, idempotence))
                for label, idempotence in ((" (each one's default)", "default"),
                                           (", plain", "plain"),
                                           (", idempotent", "idempotent"))]

    def consume(row):
        return lambda side, filled: side.client(row, filled.topic, 0, filled.end_offset)

    return [
        ("produce raw, acks=1", "records/s", True, produce(1)),
        ("produce raw, acks=all", "records/s", True, produce(-1)),
        ("Producer.send() x N, acks=1", "records/s", True, client("send", 1, records)),
        *acks_all_rows("Producer.send() x N", "send", records),
        ("Producer.send_batch, acks=1", "records/s", True,
         client("send_batch", 1, batches * BATCH_RECORDS)),
        *acks_all_rows("Producer.send_batch", "send_batch", batches * BATCH_RECORDS),
        ("raw Fetch loop, 1 MiB", "records/s", True, fetch),
        ("Consumer.poll, decoded", "records/s", True, consume("poll")),
        ("Consumer.poll_batches", "records/s", True, consume("poll_batches")),
        ("ListOffsets raw loop, p50", "us", False, raw_lookups(0.5)),
        ("ListOffsets raw loop, p99", "us", False, raw_lookups(0.99)),
        ("Consumer.offsets_for_times, p50", "us", False, client_lookups(0.5)),
        ("Consumer.offsets_for_times, p99", "us", False, client_lookups(0.99)),
    ]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--broker", action="append", default=[], metavar="LABEL=PYTHON",
                        help="the baseline first, then the one compared with it "
                             "(default for the second: this interpreter, labelled after)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batches", type=int, default=300,
                        help="1000-record batches per produce run and in the read partition")
    parser.add_argument("--records", type=int, default=200_000, help="records per send() run")
    parser.add_argument("--lookups", type=int, default=2000)
    parser.add_argument("--quick", action="store_true", help="2 rounds of small runs")
    parser.add_argument("--dir", default=None, help="where to put data (default: temp)")
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds, args.batches, args.records, args.lookups = 2, 30, 20_000, 200
    brokers = [b.split("=", 1) for b in args.broker]
    if len(brokers) == 1:
        brokers.append(["after", sys.executable])
    if len(brokers) != 2:
        parser.error("give one --broker (the baseline) or two")
    root = Path(tempfile.mkdtemp(prefix="tslog-before-after-", dir=args.dir))
    sides: list[Checkout] = []
    try:
        for label, python in brokers:
            sides.append(Checkout(label, python, root))
        filled = {side.label: Filled(side, args.batches) for side in sides}
        table = rows(args)
        figures = {name: {side.label: [] for side in sides} for name, *_ in table}
        for round_index in range(args.rounds):
            order = sides if round_index % 2 == 0 else sides[::-1]
            for name, _, _, measure in table:
                for side in order:
                    figures[name][side.label].append(measure(side, filled[side.label]))
        print_results(args, sides, table, figures)
    finally:
        for side in sides:
            side.stop()
        shutil.rmtree(root, ignore_errors=True)
    return 0


def print_results(args, sides, table, figures) -> None:
    before, after = (side.label for side in sides)
    out = []
    for name, unit, higher, _ in table:
        a, b = figures[name][after], figures[name][before]
        ratios = [x / y for x, y in zip(a, b)]
        gained = [r >= 1 if higher else r <= 1 for r in ratios]
        verdict = ("better or equal in every round" if all(gained)
                   else "worse in every round" if not any(gained)
                   else f"tie: better in {sum(gained)} of {len(gained)} rounds")
        out.append([name, unit, f"{statistics.median(b):,.0f}", f"{statistics.median(a):,.0f}",
                    f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})",
                    "higher" if higher else "lower", verdict])
    print_table(f"{after} against {before}: {args.rounds} rounds, the order flipped each round "
                f"({args.batches} batches of {BATCH_RECORDS} records per produce run and in "
                f"the read partition; {args.records:,} records per send() run; "
                f"{args.lookups:,} lookups per latency run)",
                ["row", "unit", f"{before} (median)", f"{after} (median)",
                 f"{after}/{before}, median of rounds (min-max)", "better is",
                 f"{after}, round by round"], out,
                ["each ratio divides one round's figures, taken a minute apart at most; "
                 "a row whose rounds disagree is a tie on this machine."])
    for name, *_ in table:
        print(f"  {name}: " + "; ".join(
            f"{label} " + ", ".join(f"{x:,.0f}" for x in values)
            for label, values in figures[name].items()))


if __name__ == "__main__":
    sys.exit(main())
