"""The tslog Python client (kafka-python's names).

    from tslog.client import Admin, Producer, Consumer, TopicPartition   # blocking
    from tslog.client.aio import AsyncAdmin, AsyncProducer, AsyncConsumer

The blocking classes are thin facades over the asyncio core, which they run on a private
event loop thread; both kinds are context managers and warn (ResourceWarning) if dropped
without ``close()``. Each takes ``security=Security(...)`` for TLS (docs/security.md).
"""

from ._types import (
    AclBinding,
    AclBindingFilter,
    ColumnBatch,
    ConfigEntry,
    ConsumerRecord,
    GroupDescription,
    GroupListing,
    MemberDescription,
    OffsetAndMetadata,
    OffsetAndTimestamp,
    PartitionInfo,
    PartitionReassignment,
    RecordMetadata,
    TopicDescription,
    TopicPartition,
)
from ._cluster import parse_bootstrap
from .errors import ConnectionLostError, RequestTimedOutError, TlsError, TslogError
from .security import Security
from ._membership import ConsumerRebalanceListener
from .sync import Admin, Consumer, Producer

__all__ = [
    "AclBinding",
    "AclBindingFilter",
    "Admin",
    "ColumnBatch",
    "ConfigEntry",
    "ConnectionLostError",
    "Consumer",
    "ConsumerRebalanceListener",
    "ConsumerRecord",
    "GroupDescription",
    "GroupListing",
    "MemberDescription",
    "OffsetAndMetadata",
    "OffsetAndTimestamp",
    "PartitionInfo",
    "PartitionReassignment",
    "Producer",
    "RecordMetadata",
    "RequestTimedOutError",
    "Security",
    "TlsError",
    "TopicDescription",
    "TopicPartition",
    "TslogError",
    "parse_bootstrap",
]
