"""Consumer options a Kafka user may bring that mean something else here are refused with a
message saying where the setting lives, not silently ignored."""

import pytest

from tslog.client.aio import AsyncConsumer


def test_session_timeout_is_the_brokers_and_the_client_says_so():
    with pytest.raises(ValueError, match=r"group_session_timeout_ms \(TSLOG_GROUP_SESSION"):
        AsyncConsumer("127.0.0.1:1", group_id="g", session_timeout_ms=10_000)


def test_an_unknown_offset_reset_is_refused():
    with pytest.raises(ValueError, match="auto_offset_reset"):
        AsyncConsumer("127.0.0.1:1", group_id="g", auto_offset_reset="smallest")
