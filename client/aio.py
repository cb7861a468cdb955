"""The asyncio client: ``from tslog.client.aio import AsyncAdmin, AsyncProducer, AsyncConsumer``.

Each class is an async context manager owning its own connections; the sync classes in
``tslog.client`` run these on a private event loop thread.
"""

from ._admin import AsyncAdmin
from ._consumer import AsyncConsumer, NoOffsetForPartitionError
from ._membership import ConsumerRebalanceListener
from ._producer import AsyncProducer
from ._outcome_futures import RecordFuture
from ._types import (
    AclBinding,
    AclBindingFilter,
    ColumnBatch,
    ConfigEntry,
    ConsumerRecord,
    OffsetAndTimestamp,
    PartitionInfo,
    RecordMetadata,
    TopicDescription,
    TopicPartition,
)

__all__ = [
    "AclBinding",
    "AclBindingFilter",
    "AsyncAdmin",
    "AsyncConsumer",
    "AsyncProducer",
    "ColumnBatch",
    "ConfigEntry",
    "ConsumerRebalanceListener",
    "ConsumerRecord",
    "NoOffsetForPartitionError",
    "OffsetAndTimestamp",
    "PartitionInfo",
    "RecordFuture",
    "RecordMetadata",
    "TopicDescription",
    "TopicPartition",
]
