"""Which topics exist, their partition counts and config overrides: the interface and its
stores, side by side.

``store.py``: ``TopicMetadata``, the ``MetadataStore`` interface, a single node's
``LocalMetadataStore`` (one JSON file in the data directory) and the ``DeletionJournal``;
``etcd_store.py``: ``EtcdMetadataStore``, a cluster's topics in etcd (imported by name where
a clustered broker opens it, so this package needs no etcd).
"""

from .store import (
    DELETING_FILE,
    META_DIR,
    TOPICS_FILE,
    DeletionJournal,
    LocalMetadataStore,
    MetadataStore,
    TopicMetadata,
    topic_name_problem,
)

__all__ = ["DELETING_FILE", "META_DIR", "TOPICS_FILE", "DeletionJournal", "LocalMetadataStore",
           "MetadataStore", "TopicMetadata", "topic_name_problem"]
