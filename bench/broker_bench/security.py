"""Security rows: what TLS and SASL/SCRAM cost a client, beside plain TCP in the same run.

A second broker is started with its listener on TLS (a ``trustme`` CA, as the tests use)
and SCRAM on (users from ``sasl_bootstrap_users_file``); the rows run the same work against
it and against the plain broker: ``Producer.send_batch`` of 1000-record batches (acks=1:
the broker's work per batch, not a group-commit fsync), ``Consumer.poll_batches`` of those
records from the start, and the set-up of one connection to its first answer (TCP connect,
TLS handshake, the SCRAM exchange, ApiVersions). The issue's target is a TLS+SCRAM rate at
least 0.7x of plain TCP's for the batch rows.
"""

from __future__ import annotations

import time
from pathlib import Path

from tests.helpers.broker_process import BrokerProcess
from tests.helpers.tls import make_tls_files
from tslog.client.security import Security
from tslog.protocol.messages import ApiKey

from .common import BATCH_RECORDS, HOST, VALUE, median, print_table, ratio, spread, verdict
from .context import Setup

_PASSWORD = "bench-only-password"  # a throwaway user on a throwaway broker
_CONNECTS = 40  # connection set-ups timed per run


def _secured_broker(root: Path) -> tuple[BrokerProcess, Security]:
    certs = make_tls_files(root / "certs")
    users = root / "users"
    users.write_text(f"bench:{_PASSWORD}\n")
    broker = BrokerProcess(root / "secure-broker-data", args=["--log-level", "WARNING"],
                           config={**certs.broker_config("none"),
                                   "sasl_mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
                                   "sasl_bootstrap_users_file": str(users)},
                           ssl_context=certs.client_context())
    security = Security(protocol="SASL_SSL", ssl_cafile=certs.ca,
                        sasl_mechanism="SCRAM-SHA-256", sasl_username="bench",
                        sasl_password=_PASSWORD)
    return broker, security


def _produce(bootstrap: str, security: Security | None, topic: str, batches: int) -> float:
    """records/s of ``batches`` send_batch calls of BATCH_RECORDS records, all acknowledged."""
    from tslog.client import Admin, Producer

    with Admin(bootstrap, security=security) as admin:
        admin.create_topic(topic)
    values = [VALUE] * BATCH_RECORDS
    with Producer(bootstrap, security=security, acks=1) as producer:
        producer.send_batch(topic, values, partition=0).get(timeout=60)  # warm: connections
        started = time.perf_counter()
        futures = [producer.send_batch(topic, values, partition=0) for _ in range(batches)]
        for future in futures:
            future.get(timeout=120)
        elapsed = time.perf_counter() - started
    return batches * BATCH_RECORDS / elapsed


def _consume(bootstrap: str, security: Security | None, topic: str, records: int) -> float:
    """records/s of poll_batches from the start of ``topic`` until ``records`` are read. The
    clock starts after the first answer: the connections' set-up (TLS, SCRAM) is its own
    row, and here it would be a fixed cost hidden in a rate."""
    from tslog.client import Consumer, TopicPartition

    def read(consumer) -> int:
        return sum(b.columns.record_count - b.start
                   for b in consumer.poll_batches(timeout_ms=2000))

    with Consumer(bootstrap, security=security, auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        first = read(consumer)
        started = time.perf_counter()
        count, deadline = 0, started + 120
        while first + count < records and time.perf_counter() < deadline:
            count += read(consumer)
        elapsed = time.perf_counter() - started
    if first + count < records:
        raise RuntimeError(f"read {first + count} of {records} records of {topic}")
    return count / elapsed


def _connect_ms(port: int, security: Security | None) -> float:
    """Median ms from connect() to the first answer (ApiVersions), after any TLS handshake
    and SCRAM login; one TLS context for all of them, as a client keeps."""
    from tslog.client.blocking import BrokerSocket

    context = security.ssl_context() if security is not None else None
    times = []
    for _ in range(_CONNECTS):
        started = time.perf_counter()
        sock = BrokerSocket(HOST, port, 30.0, "bench", security=security, ssl_context=context)
        sock.request(ApiKey.API_VERSIONS, {})
        times.append(time.perf_counter() - started)
        sock.close()
    return median(times) * 1000


def section_security(setup: Setup) -> None:
    root = setup.broker.data_dir.parent
    secured, security = _secured_broker(root)
    batches = setup.produce_batches
    records = (batches + 1) * BATCH_RECORDS
    plain_target = (setup.broker.bootstrap, None)
    secure_target = (secured.bootstrap, security)
    produce = {"plain": [], "secure": []}
    consume = {"plain": [], "secure": []}
    connect = {"plain": [], "secure": []}
    try:
        secured.start()
        for run in range(setup.runs):
            order = [("plain", plain_target), ("secure", secure_target)]
            for name, (bootstrap, sec) in (order if run % 2 == 0 else order[::-1]):
                topic = f"security-{name}-{run}"
                produce[name].append(_produce(bootstrap, sec, topic, batches))
                consume[name].append(_consume(bootstrap, sec, topic, records))
                port = int(bootstrap.rsplit(":", 1)[1])
                connect[name].append(_connect_ms(port, sec))
    finally:
        secured.stop()
    rows = []
    for label, figures in ((f"produce send_batch x{BATCH_RECORDS} (records/s)", produce),
                           ("consume poll_batches (records/s)", consume)):
        share = median(figures["secure"]) / median(figures["plain"])
        rows.append([label, spread(figures["plain"]), spread(figures["secure"]),
                     ratio(median(figures["secure"]), median(figures["plain"])),
                     f">= 0.7x: {verdict(share >= 0.7)}"])
    rows.append(["connection set-up to first answer (ms)", spread(connect["plain"], digits=2),
                 spread(connect["secure"], digits=2),
                 ratio(median(connect["secure"]), median(connect["plain"])), "-"])
    print_table("Security: plain TCP against TLS + SASL/SCRAM-SHA-256 (same run)",
                ["row", "plain TCP", "TLS+SCRAM", "ratio", "target"], rows,
                notes=[f"{batches} batches of {BATCH_RECORDS} x {len(VALUE)}-byte records per "
                       "run, acks=1, one partition; the runs alternate which broker goes first",
                       f"set-up: median of {_CONNECTS} connections per run: TCP connect, TLS "
                       "1.3 handshake, SCRAM (the client derives its key: PBKDF2 at the user's iterations), "
                       "ApiVersions"])
