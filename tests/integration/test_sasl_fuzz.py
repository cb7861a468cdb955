"""Fuzz-style: random bytes and truncated frames before, during and after the SCRAM exchange
never crash the broker and never authenticate.

Method: a seeded random generator (a failure names its seed) builds many hostile
connections to one SASL broker, all opened at once so their waits overlap: garbage before
any login, a handshake followed by random or mutated SCRAM messages or a frame cut short, and
garbage after a good login. Each hostile connection before or during the exchange then asks
for Metadata and Produce: neither may ever be answered (the broker closes it, at the latest
after ``sasl_authentication_timeout_ms``). Afterwards the broker still serves a good client,
and its log holds no traceback.
"""

from __future__ import annotations

import random
import socket
import struct

import pytest
import scramp

from tests.helpers.broker_process import BrokerProcess
from tests.helpers.wire import Wire
from tslog.client import Admin
from tslog.client.security import Security
from tslog.protocol.messages import ApiKey, split_response
from tslog.protocol.sasl import ScramLogin

SEED = 1626
CASES = 60
PASSWORD = "fuzz-password-0042"


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    base = tmp_path_factory.mktemp("scram-fuzz")
    (base / "users").write_text(f"fuzz:{PASSWORD}\n")
    process = BrokerProcess(base / "data", config={
        "sasl_mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
        "sasl_authentication_timeout_ms": 1000,
        "sasl_bootstrap_users_file": base / "users"})
    process.start()
    yield process
    process.cleanup()


def garbage(rng: random.Random) -> bytes:
    kind = rng.randrange(3)
    body = rng.randbytes(rng.randrange(1, 300))
    if kind == 0:
        return body  # no framing at all
    if kind == 1:
        return struct.pack(">i", len(body)) + body  # a frame of random content
    return struct.pack(">i", len(body) + rng.randrange(1, 500)) + body  # a frame cut short


def send_auth(wire: Wire, rng: random.Random, message: bytes) -> None:
    """A SaslAuthenticate, sometimes whole, sometimes cut short."""
    frame = wire.encode(ApiKey.SASL_AUTHENTICATE, {"auth_bytes": message}, validate=False)
    wire.send_raw(frame if rng.random() < 0.7 else frame[:rng.randrange(1, len(frame))])


def mutate(rng: random.Random, data: bytes) -> bytes:
    data = bytearray(data)
    for _ in range(rng.randrange(1, 4)):
        data[rng.randrange(len(data))] = rng.randrange(256)
    return bytes(data)


def hostile(broker: BrokerProcess, rng: random.Random) -> tuple[Wire, set[int]]:
    """A connection that tries its luck; returns it and the ids that must never be answered."""
    wire = Wire(broker.host, broker.port, timeout_s=5.0)
    stage = rng.choice(["before", "handshake", "client-first", "client-final"])
    try:
        if stage == "before":
            wire.send_raw(garbage(rng))
        else:
            mechanism = rng.choice(["SCRAM-SHA-256", "SCRAM-SHA-512"])
            wire.request(ApiKey.SASL_HANDSHAKE, {"mechanism": mechanism})
            client = scramp.ScramClient([mechanism], rng.choice(["fuzz", "nobody"]),
                                        "guess-%d" % rng.randrange(10**6))
            if stage == "handshake":
                send_auth(wire, rng, rng.randbytes(rng.randrange(0, 200)))
            elif stage == "client-first":
                send_auth(wire, rng, mutate(rng, client.get_client_first().encode()))
            else:
                answer = wire.request(ApiKey.SASL_AUTHENTICATE,
                                      {"auth_bytes": client.get_client_first().encode()})
                client.set_server_first(bytes(answer["auth_bytes"]).decode())
                final = client.get_client_final().encode()
                send_auth(wire, rng, rng.choice([mutate(rng, final),
                                                 rng.randbytes(len(final))]))
        forbidden = {wire.send(ApiKey.METADATA, {"topics": None}),
                     wire.send(ApiKey.PRODUCE, {"acks": 1, "timeout_ms": 1000, "topics": []},
                               validate=False)}
    except (ConnectionError, AssertionError, OSError):
        forbidden = set()  # closed already: nothing more can be asked
    return wire, forbidden


def answered_ids(wire: Wire) -> set[int]:
    """The correlation ids the broker answered on ``wire`` until it closed it."""
    ids = set()
    while True:
        try:
            frame = wire.read_frame()
        except (ConnectionError, socket.timeout, OSError):
            return ids
        if frame is None:
            return ids
        try:
            ids.add(split_response(frame)[0])
        except Exception:  # noqa: BLE001 - not an envelope: answers nothing
            pass


def test_random_bytes_before_during_and_after_the_exchange(broker):
    rng = random.Random(SEED)
    connections = [hostile(broker, rng) for _ in range(CASES)]
    security = Security(protocol="SASL_PLAINTEXT", sasl_username="fuzz",
                        sasl_password=PASSWORD)
    for _ in range(10):  # after a good login: garbage costs the connection, nothing else
        with Wire(broker.host, broker.port, timeout_s=5.0) as wire:
            login = ScramLogin("SCRAM-SHA-256", "fuzz", PASSWORD)
            api_key, body = login.first()
            while api_key is not None:
                api_key, body = login.answer(wire.request(api_key, body))
            assert "brokers" in wire.request(ApiKey.METADATA, {"topics": None})
            wire.send_raw(garbage(rng))
    for (wire, forbidden), index in zip(connections, range(CASES)):
        with wire:
            answered = answered_ids(wire)
        assert not forbidden & answered, f"case {index} (seed {SEED}) got an answer"
    assert broker.running
    with Admin(broker.bootstrap, security=security) as admin:
        admin.create_topic("still-serving")
        assert "still-serving" in admin.list_topics()
    log = broker.log_text()
    assert "Traceback" not in log and "handler failed" not in log
    assert "authenticated as User:nobody" not in log
