"""The Kafka listener: Kafka's wire protocol in front of tslog's own typed services.

The connection is the native listener's (``server/connection.BrokerConnection``, one shell
for both ports); ``front.KafkaFront`` gives it Kafka's codec (``tslog.protocol.kafka``), the
login rules and the adapters; ``dispatch.TABLE`` maps each api key to an adapter that
translates the Kafka body, once, into the typed request of the service tslog's own port
calls (``services.KafkaServices``: data, groups, partition and topic admin, each behind the
same gate), so validation, durability, idempotence, long polls and ACLs are shared, and
translates the typed result back. Records are converted per batch at this edge; they stay
stored in tslog's format. docs/kafka.md is the user's page.
"""
