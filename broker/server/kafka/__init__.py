"""The Kafka listener's broker side (issue 19): Kafka requests mapped onto tslog's services.

``group_apis``: the consumer-group APIs (FindCoordinator, JoinGroup, SyncGroup, Heartbeat,
LeaveGroup, OffsetCommit, OffsetFetch) as ``adapter(services, body, version, info)``.
"""
