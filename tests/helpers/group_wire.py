"""A consumer-group member spoken over the raw wire (ConsumerGroupHeartbeat), for tests that
need a live member without a client: to make a group non-empty, or to leave it again."""

from __future__ import annotations

from tslog.protocol.messages import ApiKey

from .wire import Wire


def heartbeat(wire: Wire, group: str, member_id: str, epoch: int, topics=None) -> dict:
    """One heartbeat (epoch 0 joins, -1 leaves); asserts it was accepted."""
    answer = wire.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, {
        "group_id": group, "member_id": member_id, "member_epoch": epoch,
        "subscribed_topics": topics, "owned": None if epoch else []})
    assert answer["error_code"] == 0, answer
    return answer


def join(wire: Wire, group: str, topics: list[str]) -> tuple[str, int]:
    """A member joins (epoch 0) and is live until it leaves or its session times out."""
    answer = heartbeat(wire, group, "", 0, topics)
    return answer["member_id"], answer["member_epoch"]
