"""The Kafka listener: Kafka's wire protocol in front of tslog's own request handlers.

The connection is the native listener's (``server/connection.BrokerConnection``, one shell
for both ports); ``front.KafkaFront`` gives it Kafka's codec (``tslog.protocol.kafka``), the
login rules and the adapters; ``dispatch.TABLE`` maps each api key to
an adapter that translates the Kafka body to the native one, calls the native handler the
msgpack listener uses (so validation, durability, idempotence, long polls and ACLs are
shared), and translates the answer back. Records are converted per batch at this edge; they
stay stored in tslog's format. ``group_apis`` serves the classic consumer-group APIs
(FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch)
through ``groups.classic_service``. docs/kafka.md is the user's page.
"""
