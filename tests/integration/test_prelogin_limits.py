"""Work before login is bounded per address and in total, and freed on time (issue 38).

Goal: what a client that logs in notices while others attack the login: a flood of idle TLS
connections from other addresses (127.0.0.2, 127.0.0.3: all of 127.0.0.0/8 is loopback)
never locks out a client from 127.0.0.1, which logs in and works within 1 s throughout; a
SASL timeout frees the connection's slot at once (not when the idle peer answers the TLS
close); a 4 MiB SCRAM user name is refused within 50 ms while a logged-in client's requests
keep their latency; a refusal is a typed answer naming the limit or a logged close; a failed
login is answered only after ``connection_failed_authentication_delay_ms``, without stalling
anyone; and a log line holds only a bounded prefix of what a client sent.

Method: one real broker for the module, TLS (trustme certificates) and SCRAM on, with small
limits so the floods stay small: 20 unauthenticated connections per address, 20 new ones per
second per address, a 1.5 s login timeout, an 800 ms failed-login delay.
"""

from __future__ import annotations

import socket
import ssl
import statistics
import threading
import time

import pytest

from tests.helpers.broker_process import BrokerProcess
from tests.helpers.tls import make_tls_files
from tests.helpers.wire import Wire
from tslog.client import Admin, Producer
from tslog.client.security import Security
from tslog.protocol.errors import ErrorCode
from tslog.protocol.messages import ApiKey

PASSWORD = "prelogin-Pa55word-77"
PER_ADDRESS = 20
RATE = 20
TIMEOUT_MS = 1500
DELAY_MS = 800


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return make_tls_files(tmp_path_factory.mktemp("prelogin-certs"))


@pytest.fixture(scope="module")
def broker(tmp_path_factory, files):
    base = tmp_path_factory.mktemp("prelogin")
    (base / "users").write_text(f"admin:{PASSWORD}\n")
    process = BrokerProcess(base / "data", ssl_context=files.client_context(), config={
        **files.broker_config(),
        "sasl_mechanisms": "SCRAM-SHA-512",
        "sasl_bootstrap_users_file": base / "users",
        "sasl_authentication_timeout_ms": TIMEOUT_MS,
        "max_unauthenticated_connections_per_address": PER_ADDRESS,
        "max_connection_rate_per_address": RATE,
        "connection_failed_authentication_delay_ms": DELAY_MS})
    process.start()
    yield process
    process.cleanup()


def login(files, password: str = PASSWORD) -> Security:
    return Security(protocol="SASL_SSL", ssl_cafile=files.ca, sasl_mechanism="SCRAM-SHA-512",
                    sasl_username="admin", sasl_password=password)


def tls_wire(broker, files, source: str, timeout_s: float = 10.0) -> Wire:
    return Wire(broker.host, broker.port, timeout_s, ssl_context=files.client_context(),
                source=source)


def wait_for_log(broker, text: str, timeout_s: float = 10.0) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if text in (log := broker.log_text()):
            return log
        time.sleep(0.05)
    raise AssertionError(f"{text!r} not in the broker log:\n{broker.log_text()[-3000:]}")


class IdleFlood:
    """A thread holding as many idle TLS connections from ``source`` as the broker takes
    (handshake done, then nothing sent or read), opening new ones as fast as it can while
    the broker refuses or closes them, until stopped."""

    def __init__(self, broker, files, source: str, most: int) -> None:
        self.broker, self.context, self.source, self.most = broker, files.client_context(), \
            source, most
        self.held: list[socket.socket] = []
        self.opened = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> IdleFlood:
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._stop.set()
        self._thread.join(30)
        for sock in self.held:
            sock.close()

    def _run(self) -> None:
        while not self._stop.is_set():
            if len(self.held) >= self.most:
                # Let go of those the broker closed (refused); the ones it took stay held
                # until it times them out. Only if all are still open, the oldest goes.
                self.held = [sock for sock in self.held if _still_open(sock)]
                if len(self.held) >= self.most:
                    self.held.pop(0).close()
            try:
                raw = socket.create_connection((self.broker.host, self.broker.port), timeout=5,
                                               source_address=(self.source, 0))
                self.held.append(self.context.wrap_socket(raw, server_hostname="127.0.0.1"))
                self.opened += 1
            except (OSError, ssl.SSLError):
                pass


def _still_open(sock: ssl.SSLSocket) -> bool:
    """Whether the broker has not closed this idle TLS connection: a read that would block
    (closing it otherwise). A fast machine opens hundreds of connections a second, so
    dropping the oldest alone closed the ones the broker had taken before it could time
    them out, and the test never saw the timeout it checks."""
    sock.setblocking(False)
    try:
        sock.recv(1)
    except (ssl.SSLWantReadError, BlockingIOError):
        return True
    except (OSError, ssl.SSLError):
        pass
    sock.close()
    return False


def admin_round_trip(broker, files) -> float:
    """Log in from 127.0.0.1 and list topics: the seconds it took."""
    started = time.monotonic()
    with Admin(broker.bootstrap, security=login(files)) as admin:
        admin.list_topics()
    return time.monotonic() - started


@pytest.mark.slow
def test_idle_tls_floods_from_other_addresses_never_lock_out_a_client_that_logs_in(
        broker, files):
    took = []
    with IdleFlood(broker, files, "127.0.0.3", 300) as flood3, \
            IdleFlood(broker, files, "127.0.0.2", 300) as flood2:
        deadline = time.monotonic() + 3 * TIMEOUT_MS / 1000 + 2  # past several SASL timeouts
        while time.monotonic() < deadline:
            took.append(admin_round_trip(broker, files))
            time.sleep(0.1)
        assert flood3.opened > PER_ADDRESS and flood2.opened > PER_ADDRESS
    assert max(took) < 1.0, took
    log = broker.log_text()
    assert "127.0.0.3" in log and "not authenticated within 1500 ms; closing" in log
    assert ("max_unauthenticated_connections_per_address = 20" in log
            or "max_connection_rate_per_address = 20 per second" in log)


def test_the_sasl_timeout_frees_an_idle_connections_slot_at_once(broker, files):
    """The idle clients never read, so a TLS close would wait for them (asyncio: 30 s)."""
    held = []
    try:
        time.sleep(1.0)  # the rate limit's bucket refills (RATE tokens): only counts refuse
        while len(held) < PER_ADDRESS:
            held.append(tls_wire(broker, files, "127.0.0.3"))
        assert held[0].api_versions()["error_code"] == 0
        filled = time.monotonic()
        with tls_wire(broker, files, "127.0.0.3") as refused:
            body = refused.api_versions()
            assert body["error_code"] == ErrorCode.TOO_MANY_CONNECTIONS
            assert "max_unauthenticated_connections_per_address = 20" in body["error_message"]
        while True:  # the held ones time out: the address has room again
            with tls_wire(broker, files, "127.0.0.3") as probe:
                if probe.api_versions()["error_code"] == 0:
                    break
            assert time.monotonic() - filled < 10, "slots not freed by the SASL timeout"
            time.sleep(0.2)
    finally:
        for wire in held:
            wire.close()


def sasl_authenticate_frame(wire: Wire, auth_bytes: bytes) -> bytes:
    return wire.encode(ApiKey.SASL_AUTHENTICATE, {"auth_bytes": auth_bytes})


def refused_within(wire: Wire, frame: bytes) -> float:
    """Send ``frame`` and return the seconds until the broker closed the connection."""
    started = time.monotonic()
    try:
        wire.send_raw(frame)
        assert wire.read_frame() is None
    except (ConnectionResetError, BrokenPipeError, ssl.SSLError):
        pass
    return time.monotonic() - started


def test_a_4_mib_user_name_is_refused_within_50_ms_and_others_keep_their_latency(
        broker, files):
    with Admin(broker.bootstrap, security=login(files)) as admin:
        baseline = []
        for _ in range(5):
            started = time.monotonic()
            admin.list_topics()
            baseline.append(time.monotonic() - started)
        refusals, during = [], []
        for _ in range(3):
            with tls_wire(broker, files, "127.0.0.2") as wire:
                assert wire.request(ApiKey.SASL_HANDSHAKE,
                                    {"mechanism": "SCRAM-SHA-512"})["error_code"] == 0
                frame = sasl_authenticate_frame(wire, b"n,,n=" + b"x" * (4 << 20) + b",r=abc")
                refusals.append(refused_within(wire, frame))
            started = time.monotonic()
            admin.list_topics()
            during.append(time.monotonic() - started)
            time.sleep(1 / RATE)
    assert statistics.median(refusals) < 0.050, refusals
    assert max(during) < 1.0, (baseline, during)
    log = wait_for_log(broker, "exceeds the 524288-byte limit")
    assert "x" * 100 not in log  # no line holds the name


def test_a_user_name_under_the_frame_cap_fails_fast_typed_and_is_logged_bounded(broker, files):
    with tls_wire(broker, files, "127.0.0.2") as wire:
        assert wire.request(ApiKey.SASL_HANDSHAKE,
                            {"mechanism": "SCRAM-SHA-512"})["error_code"] == 0
        body = wire.request(ApiKey.SASL_AUTHENTICATE,
                            {"auth_bytes": b"n,,n=" + b"y" * 300_000 + b",r=" + b"z" * 1000})
        assert body["error_code"] == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert len(body["auth_bytes"]) == 0  # the nonce is never echoed
        assert wire.is_closed_by_peer()
    log = wait_for_log(broker, "a message too large to parse, starting")
    assert "y" * 100 not in log
    [line] = [line for line in log.splitlines() if "too large to parse" in line]
    assert len(line) < 300, line


def test_a_failed_login_is_answered_after_the_delay_without_stalling_anyone(broker, files):
    answered: dict = {}

    def fail_a_login() -> None:
        with pytest.raises(Exception) as raised:
            with Admin(broker.bootstrap, security=login(files, "wrong-password")):
                pass
        answered["error"], answered["at"] = raised.value, time.monotonic()

    with Admin(broker.bootstrap, security=login(files)) as admin:
        started = time.monotonic()
        thread = threading.Thread(target=fail_a_login)
        thread.start()
        served = 0
        while thread.is_alive():  # the failing login waits; this client is served meanwhile
            admin.list_topics()
            served += 1
        thread.join()
    assert type(answered["error"]).__name__ == "SaslAuthenticationFailedError"
    assert answered["at"] - started >= DELAY_MS / 1000
    assert served > 1


def test_connections_over_the_rate_from_one_address_are_refused_with_the_reason(
        broker, files):
    """A loop of connect, ask, close from 127.0.0.2 (each closed before the next opens, so
    only the rate can refuse): past the bucket, each is told why."""
    answers = []
    for _ in range(4 * RATE):
        with tls_wire(broker, files, "127.0.0.2", timeout_s=5) as wire:
            answers.append(wire.api_versions())
    refused = [body["error_message"] for body in answers
               if body["error_code"] == ErrorCode.TOO_MANY_CONNECTIONS]
    assert refused and all("max_connection_rate_per_address = 20 per second" in message
                           for message in refused)
    assert admin_round_trip(broker, files) < 1.0  # 127.0.0.1 has its own bucket
    wait_for_log(broker, "too many new connections from 127.0.0.2")


def test_a_frame_over_the_pre_login_cap_only_before_login(broker, files):
    """After the login the broker's full frame size applies again (a Produce may be big).
    From 127.0.0.4: the rate test before this one empties 127.0.0.2's bucket, and a refill
    is not what this test is about."""
    with tls_wire(broker, files, "127.0.0.4") as wire:
        frame = sasl_authenticate_frame(wire, b"q" * (600 << 10))
        assert wire.request(ApiKey.API_VERSIONS, {})["error_code"] == 0
        refused_within(wire, frame)
    with Admin(broker.bootstrap, security=login(files)) as admin:
        admin.create_topic("big-after-login", exist_ok=True)
    with Producer(broker.bootstrap, security=login(files), linger_ms=0) as producer:
        assert producer.send("big-after-login", b"v" * (700 << 10)).result(timeout=30).offset == 0
