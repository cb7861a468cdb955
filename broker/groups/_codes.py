"""Wire error codes the group coordinator answers with that ``ErrorCode`` does not hold yet.

Why a second enum: ``protocol/errors.py`` is the one table of wire codes, but the coordinator
was written before that table grew the consumer-group codes. These members have the same
shape (number, ``retriable``, ``message``) and Apache Kafka's numbers, so moving them into
``ErrorCode`` is a copy; a unit test fails the day ``ErrorCode`` holds one of these names
under a different number. Until then a server turns one into a wire number with ``int()``.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Union

from ...protocol.errors import ErrorCode


class GroupErrorCode(IntEnum):
    """A consumer-group wire code missing from ``ErrorCode``; same fields, Kafka's numbers."""

    retriable: bool
    message: str

    def __new__(cls, value: int, retriable: bool, message: str) -> GroupErrorCode:
        member = int.__new__(cls, value)
        member._value_ = value
        member.retriable = retriable
        member.message = message
        return member

    UNKNOWN_MEMBER_ID = 25, False, "The group coordinator does not know this member id."
    NON_EMPTY_GROUP = 68, False, "The group still has members."
    GROUP_MAX_SIZE_REACHED = 81, False, "The group already has as many members as allowed."
    FENCED_MEMBER_EPOCH = 110, False, "The member epoch is fenced; rejoin the group with epoch 0."
    STALE_MEMBER_EPOCH = 113, False, "The member epoch is not the current one; heartbeat first."


GroupCode = Union[ErrorCode, GroupErrorCode]
"""What the coordinator answers: either is an ``IntEnum`` with ``retriable`` and ``message``."""
