"""Kafka's wire protocol, sans-I/O: the codec the Kafka listener (issue 19) sits on.

- ``primitives``: Kafka's integer, varint, string, bytes, array, uuid and tagged-field types.
- ``schema``: Kafka's JSON message schemas (vendored in ``schemas/``) compiled per version.
- ``codec``: whole requests and responses, headers v0-v2, typed errors for unknown versions.
- ``record_batch``: RecordBatch v2 (magic 2) with every compression codec Kafka clients send,
  and ``convert``: Kafka batches to and from tslog's own batches.

Why a schema interpreter rather than ``kio`` or hand-written codecs: see docs/kafka.md and the
measurement below.
"""

from .codec import (
    API_KEYS,
    API_NAMES,
    SUPPORTED,
    KafkaRequest,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)
from .errors import KafkaBatchError, KafkaDecodeError, UnsupportedCompression, UnsupportedKafkaVersion

__all__ = [
    "API_KEYS", "API_NAMES", "SUPPORTED", "KafkaBatchError", "KafkaDecodeError", "KafkaRequest",
    "UnsupportedCompression", "UnsupportedKafkaVersion", "decode_request", "decode_response",
    "encode_request", "encode_response",
]
