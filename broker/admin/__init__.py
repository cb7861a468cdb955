"""The topic and config admin service: CreateTopics, DeleteTopics, CreatePartitions,
Describe/AlterConfigs (and the Kafka port's IncrementalAlterConfigs) for both front doors.

``requests.py`` holds the typed requests and results, ``topics.py`` the ``TopicAdmin`` that
serves them. Each port's adapter (``server/handlers.py`` for tslog's frames,
``server/kafka/admin_apis.py`` and ``config_apis.py`` for Kafka's) translates its own bodies
into these once; the request gate (``security/topic_admin_gate.py``, ``GatedTopicAdmin``)
judges them.
"""
