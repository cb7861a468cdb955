"""Broker state over a temporary directory, for handler tests with no sockets."""

from __future__ import annotations

import pytest

from tslog.broker.config import BrokerConfig
from tslog.broker.server.state import Broker


@pytest.fixture
def make_broker(tmp_path):
    opened: list[Broker] = []

    def make(cluster=None, **settings) -> Broker:
        """A broker with these config ``settings``; ``cluster``: a test's cluster view."""
        settings.setdefault("data_dir", str(tmp_path / "data"))
        broker = Broker.open(BrokerConfig(**settings), cluster=cluster)
        opened.append(broker)
        return broker

    yield make
    for broker in opened:
        broker.close()


@pytest.fixture
def broker(make_broker) -> Broker:
    return make_broker()
