"""Admin APIs as typed services both ports call.

The partition admin service: ``partition_requests.py``, ``partitions.py`` (with
``offsets_at_times.py`` and ``reassignments.py``), judged by
``security/partition_admin_gate.py``.

The topic and config admin service (CreateTopics, DeleteTopics, CreatePartitions,
Describe/AlterConfigs, and the Kafka port's IncrementalAlterConfigs): ``requests.py`` holds
its typed requests and results, ``topics.py`` the ``TopicAdmin`` that serves them. Each
port's adapter (``server/handlers.py`` for tslog's frames, ``server/kafka/admin_apis.py``
and ``config_apis.py`` for Kafka's) translates its own bodies into these once; the request
gate (``security/topic_admin_gate.py``, ``GatedTopicAdmin``) judges them.
"""
