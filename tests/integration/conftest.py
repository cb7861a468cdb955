"""Fixtures for tests against real broker processes on loopback.

``broker`` gives a started ``BrokerProcess`` (free port, ``tmp_path`` data directory) and
stops it at teardown with SIGTERM, failing the test if it does not exit 0. ``broker_factory``
builds more, or ones with extra environment/arguments, all cleaned up the same way.
"""

from __future__ import annotations

import pytest

from tests.helpers.broker_process import BrokerProcess


@pytest.fixture
def broker_factory(tmp_path):
    started: list[BrokerProcess] = []

    def make(name: str = "broker", env: dict | None = None, args: list[str] | None = None,
             start: bool = True) -> BrokerProcess:
        process = BrokerProcess(tmp_path / name, env=env, args=args)
        started.append(process)
        return process.start() if start else process

    yield make
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
