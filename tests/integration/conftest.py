"""Fixtures for tests against real broker processes on loopback.

``broker`` gives a started ``BrokerProcess`` (free port, ``tmp_path`` data directory) and
stops it at teardown with SIGTERM, failing the test if it does not exit 0. ``broker_factory``
builds more, or ones with extra environment/arguments, all cleaned up the same way.

``members(bootstrap, group, topic)`` starts a consumer-group member process
(``tests/helpers/group_members.py``); any still running at teardown are killed.

``etcd`` gives a running single-member etcd (``/usr/bin/etcd``) on free loopback ports with a
temporary data directory, stopped by pid at teardown. ``cluster_factory(n)`` starts brokers
0..n-1 of one cluster (``first_node=k``: brokers k..k+n-1, to grow it) on that etcd (session timeout 2 s unless told otherwise) and stops them
at teardown: SIGTERM for those still running, a clean exit required.
"""

from __future__ import annotations

import pytest

from tests.helpers.broker_process import BrokerProcess, start_cluster
from tests.helpers.etcd_process import EtcdProcess
from tests.helpers.group_members import MemberProcess


@pytest.fixture
def broker_factory(tmp_path):
    started: list[BrokerProcess] = []
    yield _make_factory(tmp_path, started)
    _cleanup(started)


def _make_factory(tmp_path, started: list[BrokerProcess]):

    def make(name: str = "broker", env: dict | None = None, args: list[str] | None = None,
             start: bool = True) -> BrokerProcess:
        process = BrokerProcess(tmp_path / name, env=env, args=args)
        started.append(process)
        return process.start() if start else process

    return make


def _cleanup(started: list[BrokerProcess]) -> None:
    errors = []
    for process in started:
        try:
            process.cleanup()
        except AssertionError as exc:
            errors.append(exc)
    if errors:
        raise errors[0]


@pytest.fixture
def broker(broker_factory) -> BrokerProcess:
    return broker_factory()


@pytest.fixture
def etcd(tmp_path):
    process = EtcdProcess(tmp_path / "etcd").start()
    yield process
    process.stop()


@pytest.fixture
def cluster_factory(tmp_path, etcd):
    started: list[BrokerProcess] = []

    def make(count: int = 3, *, session_timeout_ms: int = 2000,
             config: dict | None = None, first_node: int = 0) -> list[BrokerProcess]:
        brokers = start_cluster(tmp_path, etcd.endpoint, count, first_node=first_node,
                                session_timeout_ms=session_timeout_ms, config=config)
        started.extend(brokers)
        return brokers

    yield make
    _cleanup(started)


@pytest.fixture
def members():
    started: list[MemberProcess] = []

    def start(*args) -> MemberProcess:
        member = MemberProcess(*args)
        started.append(member)
        return member

    yield start
    for member in started:
        if member.process.poll() is None:
            member.process.kill()
            member.process.wait(10)
