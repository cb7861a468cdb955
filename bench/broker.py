"""Broker benchmark over loopback: produce (batches of 1000 and of 1), consume, lookup by time, against Redis Streams;
the cost of TLS + SASL/SCRAM beside plain TCP; confluent-kafka through the Kafka listener
beside the native raw path.

Starts its own ``tslog-broker`` (temporary data directory, a free 127.0.0.1 port) and, unless
``--no-redis``, its own ``redis-server`` (no persistence, temporary directory, a free port);
stops both by pid with SIGTERM at the end, also on error. Prints tables of medians over
several runs with min-max and the ratio tslog/Redis measured in the same invocation; the
targets are printed beside the figures, never asserted.

    python bench/broker.py              # the full run (about 3-5 minutes on 2 cores)
    python bench/broker.py --quick      # a smoke run with small sizes (under a minute)
    python bench/broker.py --large      # the lookup/consume partition holds 10^7 records
    python bench/broker.py --runs 3 --no-redis

Redis rows need ``redis-server``, ``redis-cli`` and ``redis-benchmark`` (Debian:
``apt-get install redis-server redis-tools``) and redis-py (``pip install -e '.[bench]'``);
without them the Redis rows are skipped with a message.

Numbers on a noisy 2-core VM vary by +-30 %: the broker, the benchmark client and Redis share
the two cores. Compare ratios within one invocation.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

import msgpack

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.helpers and bench

from bench.broker_bench.common import BATCH_RECORDS, VALUE  # noqa: E402
from bench.broker_bench.consume import section_consume  # noqa: E402
from bench.broker_bench.context import Setup, broker_process  # noqa: E402
from bench.broker_bench.kafka import section_kafka  # noqa: E402
from bench.broker_bench.lookups import section_lookups  # noqa: E402
from bench.broker_bench.produce import section_fill, section_produce  # noqa: E402
from bench.broker_bench.redis_server import Redis, describe_redis  # noqa: E402
from bench.broker_bench.replication import section_replication  # noqa: E402
from bench.broker_bench.scrape import section_scrape  # noqa: E402
from bench.broker_bench.security import section_security  # noqa: E402
from bench.broker_bench.small_batches import section_small_batches  # noqa: E402
from tests.helpers.broker_process import free_port  # noqa: E402

SECTIONS = {"produce": section_produce, "small": section_small_batches, "fill": section_fill,
            "consume": section_consume,
            "lookups": section_lookups, "scrape": section_scrape,
            "replication": section_replication, "security": section_security,
            "kafka": section_kafka}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--large", action="store_true",
                        help="lookup/consume partition of 10^7 records (default 10^6)")
    parser.add_argument("--runs", type=int, default=None,
                        help="runs per figure (default 5; 2 with --quick)")
    parser.add_argument("--no-redis", action="store_true", help="skip the Redis rows")
    parser.add_argument("--dir", default=None, help="where to put temporary data")
    parser.add_argument("--only", action="append", choices=sorted(SECTIONS), default=None,
                        help="run just this section (repeatable; consume and lookups fill "
                             "their partition first)")
    args = parser.parse_args(argv)
    runs = max(1, args.runs or (2 if args.quick else 5))
    if args.quick:
        sizes = dict(produce_batches=50, client_records=50_000, partition_records=10**5,
                     lookups=2_000, xadd_requests=100_000, small_batches=2_000,
                     xadd_unpipelined=20_000)
    else:
        sizes = dict(produce_batches=300, client_records=300_000, partition_records=10**6,
                     lookups=10_000, xadd_requests=500_000, small_batches=20_000,
                     xadd_unpipelined=100_000)
    if args.large:
        sizes["partition_records"] = 10**7

    redis_missing = [] if args.no_redis else Redis.missing()
    root = Path(tempfile.mkdtemp(prefix="tslog-bench-broker-", dir=args.dir))
    metrics_port, kafka_port = free_port(), free_port()
    setup = Setup(broker=broker_process(root, metrics_port, kafka_port), redis=None, runs=runs,
                  metrics_port=metrics_port, kafka_port=kafka_port, **sizes)
    code = None
    try:
        print(f"tslog broker benchmark: python {sys.version.split()[0]}, {os.cpu_count()} cpus, "
              f"msgpack {'.'.join(map(str, msgpack.version))}, medians of {runs} runs (min-max), "
              f"temp dir {root}")
        print("  load average before the run: %.2f %.2f %.2f (other work on the machine skews "
              "every figure)" % os.getloadavg())
        print(f"  records: {len(VALUE)}-byte values, batches of {BATCH_RECORDS}, one partition, "
              f"everything on 127.0.0.1; the broker, this client and Redis share the machine")
        if args.no_redis:
            print("  Redis rows skipped (--no-redis)")
        elif redis_missing:
            print(f"  Redis rows SKIPPED: not installed: {', '.join(redis_missing)} "
                  "(Debian: apt-get install redis-server redis-tools; pip install redis hiredis)")
        setup.broker.start()
        print(f"  tslog-broker pid {setup.broker.process.pid} on {setup.broker.bootstrap}")
        if not args.no_redis and not redis_missing:
            setup.redis = Redis(root)
            setup.redis.start()
            print(describe_redis(setup.redis))
        chosen = set(args.only or SECTIONS)
        for name, section in SECTIONS.items():
            if name in chosen or (name == "fill" and chosen & {"consume", "lookups"}):
                section(setup)
        print("\n  load average after the run: %.2f %.2f %.2f" % os.getloadavg())
    except BaseException:
        if setup.broker.process is not None:
            print(f"\n--- tslog-broker log (tail) ---\n{setup.broker.log_text()[-4000:]}",
                  file=sys.stderr)
        raise
    finally:
        try:
            code = setup.broker.stop()
        finally:
            if setup.redis is not None:
                setup.redis.stop()
            shutil.rmtree(root, ignore_errors=True)
    if code not in (0, None):
        print(f"\ntslog-broker exited with code {code} at SIGTERM", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
