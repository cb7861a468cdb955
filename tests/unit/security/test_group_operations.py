"""One table of group operations for both ports (issue 41): every group API either port
serves is in ``request_gate.GROUP_OPERATIONS`` with Kafka's operation, the table the gate's
``GatedGroups`` judges both ports' group requests by, so a group API added to either door
without an entry fails here rather than with a KeyError on the first request of a secured
broker (the gate itself: tests/unit/broker/test_group_gate.py)."""

from __future__ import annotations

from tslog.broker.security.request_gate import GROUP_OPERATIONS
from tslog.broker.server.kafka.group_admin_apis import GROUP_ADMIN_ADAPTERS
from tslog.broker.server.kafka.group_apis import GROUP_ADAPTERS
from tslog.broker.server.kafka.offset_delete_api import OFFSET_DELETE_ADAPTERS

# Kafka's own table (kafka.server.KafkaApis / AclAuthorizer docs): the operation each group
# API needs on its group.
KAFKA = {8: "Read", 9: "Describe", 10: "Describe", 11: "Read", 12: "Read", 13: "Read",
         14: "Read", 15: "Describe", 16: "Describe", 42: "Delete", 47: "Delete", 68: "Read",
         69: "Describe"}


def test_every_group_api_of_the_kafka_port_has_kafkas_operation():
    served = {int(key) for table in (GROUP_ADAPTERS, GROUP_ADMIN_ADAPTERS,
                                     OFFSET_DELETE_ADAPTERS) for key in table}
    assert served <= GROUP_OPERATIONS.keys()
    assert GROUP_OPERATIONS == KAFKA
