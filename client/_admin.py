"""AsyncAdmin: create, grow, delete, list and describe topics; read and change configs;
offsets; consumer groups (delegated to ``GroupAdmin``, see ``_group_admin.py``); ACLs
(delegated to ``AclAdmin``, ``_acl_admin.py``).

Topic creation and deletion go to the controller (any broker when it is unknown), as in
Kafka; reads go to any broker. Per-topic errors in a response become the matching
``TslogError`` subclass, e.g. ``TopicAlreadyExistsError``.
"""

from __future__ import annotations

from tslog.protocol.errors import ErrorCode
from tslog.protocol.messages import ApiKey

from ._acl_admin import AclAdmin
from ._cluster import Cluster
from ._group_admin import GroupAdmin
from ._reassign_admin import ReassignAdmin
from ._offsets import delete_records, list_offsets
from ._batch_times import log_append_times
from ._record_reads import read_records
from ._offsets_at_times import offset_columns, offsets_at_times
from ._types import (
    AclBinding,
    AclBindingFilter,
    ConfigEntry,
    ConsumerRecord,
    GroupDescription,
    GroupListing,
    OffsetAndMetadata,
    OffsetAndTimestamp,
    TopicDescription,
    TopicPartition,
)
from .errors import TslogError, error_for, refused
from ._user_admin import ScramCredentialInfo, UserAdmin
from .security import Security


class AsyncAdmin:
    """Cluster administration; ``async with AsyncAdmin("host:port") as admin: ...``."""

    def __init__(self, bootstrap, *, request_timeout_ms: int = 30_000, retries: int = 5,
                 retry_backoff_ms: int = 100, client_id: str = "tslog-admin",
                 lookup_poll_us: int = 100, connect_timeout_ms: int = 3_000,
                 security: Security | None = None) -> None:
        """``lookup_poll_us``: ``list_offsets`` polls for its answer this long at most
        (as ``AsyncConsumer``'s); 0 turns it off. ``connect_timeout_ms``: how long setting up
        a connection may take (docs/client.md). ``security``: TLS and SASL/SCRAM options
        for every broker connection (``tslog.client.security.Security``); None = plain TCP."""
        self.request_timeout_ms = request_timeout_ms
        self._cluster = Cluster(bootstrap, client_id=client_id, retries=retries,
                                retry_backoff_ms=retry_backoff_ms,
                                request_timeout_ms=request_timeout_ms,
                                lookup_poll_us=lookup_poll_us, security=security,
                                connect_timeout_ms=connect_timeout_ms)
        self._groups = GroupAdmin(self._cluster)
        self._acls = AclAdmin(self._cluster)
        self._users = UserAdmin(self._cluster)
        self._reassign = ReassignAdmin(self._cluster, request_timeout_ms)
        self._closed = False

    async def start(self) -> None:
        await self._cluster.refresh_metadata()

    async def __aenter__(self) -> AsyncAdmin:
        await self.start()
        return self

    async def __aexit__(self, *exc_info) -> None:
        await self.close()

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            await self._cluster.close()

    def _controller(self) -> int | None:
        controller = self._cluster.controller_id
        return controller if controller in self._cluster.brokers else None

    # ---------------------------------------------------------------------------- topics

    async def create_topic(self, name: str, partitions: int = 1, replication_factor: int = 1,
                           config: dict | None = None, timeout_ms: int | None = None, *,
                           exist_ok: bool = False) -> bool:
        """Create a topic; True if this call created it.

        ``exist_ok``: a topic of that name that exists already is not an error (False is
        returned), so setup code can run again; the existing topic is left as it is, its
        partitions and configs are not compared with the ones asked for.

        Raises:
            TopicAlreadyExistsError (unless ``exist_ok``), InvalidTopicError,
            InvalidConfigError, ... (per code).
        """
        configs = {str(k): str(v) for k, v in (config or {}).items()}
        body = await self._cluster.request(self._controller(), ApiKey.CREATE_TOPICS, {
            "topics": [{"topic": name, "partitions": partitions,
                        "replication_factor": replication_factor, "configs": configs}],
            "timeout_ms": timeout_ms if timeout_ms is not None else self.request_timeout_ms})
        for topic in body["topics"]:
            code = topic["error_code"]
            if code == ErrorCode.TOPIC_ALREADY_EXISTS and exist_ok:
                return False
            if code:
                raise _failure(code, topic["error_message"], f"create topic {name!r}")
        await self._cluster.refresh_metadata()
        return True

    async def create_partitions(self, new_totals: dict[str, int], timeout_ms: int | None = None,
                                validate_only: bool = False) -> None:
        """Grow topics to the given partition counts: ``{"events": 5}`` makes ``events`` have 5
        partitions (the new total, as Kafka's ``NewPartitions.increaseTo``). Existing
        partitions and their records are untouched. Keyed records sent afterwards go to
        ``hash(key) % new total``, so a key's later records may land in another partition
        than its earlier ones. This client's metadata is refreshed; other producers and
        consumers see the new partitions at their next metadata refresh.

        Raises (the first topic's failure, after every topic was tried):
            InvalidPartitionsError: a count not larger than the current one.
            UnknownTopicOrPartitionError: no such topic.
            InvalidReplicationFactorError: too few live brokers for the topic's replicas.
        """
        body = await self._cluster.request(self._controller(), ApiKey.CREATE_PARTITIONS, {
            "topics": [{"topic": name, "count": count} for name, count in new_totals.items()],
            "timeout_ms": timeout_ms if timeout_ms is not None else self.request_timeout_ms,
            "validate_only": validate_only})
        failed = [topic for topic in body["topics"] if topic["error_code"]]
        if not validate_only:
            await self._cluster.refresh_metadata()
        if failed:
            raise _failure(failed[0]["error_code"], failed[0]["error_message"],
                           f"create partitions of topic {failed[0]['topic']!r}")

    async def alter_partition_reassignments(self, reassignments: dict) -> None:
        """Move partitions to new replica sets while they serve: ``{TopicPartition("events",
        0): [3, 4, 5]}``, preferred leader first; ``None`` instead of a list cancels the
        reassignment under way. Returns once the change is in etcd; the move itself goes on
        in the cluster (``list_partition_reassignments`` follows it; docs/cluster.md).

        Raises (the first partition's failure, after every partition was tried):
            InvalidReplicaAssignmentError: an empty or repeated set, or a broker not running.
            ReassignmentInProgressError: the partition is being moved already.
            NoReassignmentInProgressError: a cancel with nothing to cancel.
            UnknownTopicOrPartitionError: no such partition.
        """
        await self._reassign.alter(self._controller(), reassignments)

    async def list_partition_reassignments(self, partitions=None) -> dict:
        """{TopicPartition: PartitionReassignment} of the moves under way (of ``partitions``
        only, if given), with each new replica's progress as its leader sees it."""
        return await self._reassign.list(partitions)

    async def elect_leaders(self, partitions=None) -> dict:
        """Give leadership back to each partition's preferred replica (its first), Kafka's
        ``electLeaders(PREFERRED, ...)``: of ``partitions``, or of every partition it does not
        lead when None. Returns {TopicPartition: None if elected, else the error saying why
        not: ElectionNotNeededError, PreferredLeaderNotAvailableError, ...}."""
        return await self._reassign.elect_preferred(self._controller(), partitions)

    async def delete_topic(self, name: str, timeout_ms: int | None = None) -> None:
        body = await self._cluster.request(self._controller(), ApiKey.DELETE_TOPICS, {
            "topics": [name],
            "timeout_ms": timeout_ms if timeout_ms is not None else self.request_timeout_ms})
        for topic in body["topics"]:
            if topic["error_code"]:
                raise refused(topic["error_code"], f"delete topic {topic['topic']!r}")
        await self._cluster.refresh_metadata()

    async def list_topics(self) -> list[str]:
        await self._cluster.refresh_metadata()
        return sorted(self._cluster.topics)

    async def describe_topic(self, name: str) -> TopicDescription:
        """Partitions with leader, replicas, ISR and leader epoch, fresh from the broker."""
        await self._cluster.refresh_metadata()
        partitions = self._cluster.topics.get(name)
        code = self._cluster.topic_errors.get(name)
        if code:
            raise refused(code, f"describe topic {name!r}")
        if partitions is None:
            raise await self._cluster.missing_topic(name)
        return TopicDescription(name, [partitions[p] for p in sorted(partitions)])

    async def describe_topics(self) -> dict[str, TopicDescription]:
        """{name: TopicDescription} of every topic, from one Metadata (``describe_topic`` per
        name would ask once each); topics the broker reported an error for are left out."""
        await self._cluster.refresh_metadata()
        return {name: TopicDescription(name, [partitions[p] for p in sorted(partitions)])
                for name, partitions in sorted(self._cluster.topics.items())
                if not self._cluster.topic_errors.get(name)}

    async def brokers(self) -> dict[int, tuple[str, int]]:
        await self._cluster.refresh_metadata()
        return dict(self._cluster.brokers)

    async def describe_cluster(self) -> tuple[dict[int, tuple[str, int]], int]:
        """({node id: (host, port)}, controller node id or -1), from one fresh Metadata
        (Kafka's ``describeCluster``): the web console's cluster page shows both."""
        await self._cluster.refresh_metadata()
        return dict(self._cluster.brokers), self._cluster.controller_id

    # --------------------------------------------------------------------------- configs

    async def describe_configs(self, name: str, resource_type: str = "topic"
                               ) -> dict[str, ConfigEntry]:
        """Every config of a topic (or broker: ``name`` = node id) with its value and source."""
        body = await self._cluster.request(None, ApiKey.DESCRIBE_CONFIGS, {
            "resources": [{"type": resource_type, "name": str(name)}]})
        (resource,) = body["resources"]
        if resource["error_code"]:
            raise _failure(resource["error_code"], resource["error_message"],
                           f"describe configs of {resource_type} {str(name)!r}")
        return {c["name"]: ConfigEntry(c["name"], c["value"], c["source"])
                for c in resource["configs"]}

    async def alter_configs(self, name: str, configs: dict, validate_only: bool = False) -> None:
        """Change topic configs incrementally: a value overrides, None returns to the default."""
        changes = {str(k): (None if v is None else str(v)) for k, v in configs.items()}
        body = await self._cluster.request(self._controller(), ApiKey.ALTER_CONFIGS, {
            "resources": [{"type": "topic", "name": name, "configs": changes}],
            "validate_only": validate_only})
        for resource in body["resources"]:
            if resource["error_code"]:
                raise _failure(resource["error_code"], resource["error_message"],
                               f"alter configs of topic {name!r}")

    # --------------------------------------------------------------------------- offsets

    async def delete_records(self, offsets: dict, timeout_ms: int = 30_000) -> dict:
        """Delete every record before each ``tp: offset`` (-1: the high watermark), as
        kafka-python's ``delete_records``: the log start moves there, durably, and whole
        segments below it are freed. Returns {tp: the partition's log start offset}."""
        return await delete_records(self._cluster, {TopicPartition(*tp): offset
                                                     for tp, offset in offsets.items()},
                                    timeout_ms)

    async def list_offsets(self, timestamps: dict, timestamp_type: str = "append"
                           ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        """{tp: timestamp ms or -1 latest / -2 earliest / -3 max timestamp} -> offsets."""
        return await list_offsets(self._cluster, _keyed_by_partition(timestamps),
                                  timestamp_type)

    async def offsets_at_times(self, times: dict, timestamp_type: str = "append"
                               ) -> dict[TopicPartition, list[OffsetAndTimestamp | None]]:
        """{tp: [ms, ...]} -> {tp: [OffsetAndTimestamp or None, ...]} in the same order:
        per time, the first offset whose time is >= it, as ``list_offsets`` answers one time.
        One request per leader for all of them (docs/client.md: charts of records per time)."""
        return await offsets_at_times(self._cluster,
                                      {TopicPartition(*tp): list(ts) for tp, ts in times.items()},
                                      timestamp_type)

    async def offset_columns(self, partitions, times: list, timestamp_type: str = "append"
                             ) -> dict[TopicPartition, list[int]]:
        """The same times in every partition -> {tp: [offset, ...]} in the order of
        ``times``: per time, the offset ``offsets_at_times`` finds, or -1 where no record is
        that late; no object per answer (docs/client.md: charts of records per time)."""
        return await offset_columns(self._cluster, list(partitions), times, timestamp_type)

    async def log_append_times(self, offsets: dict) -> dict[TopicPartition, int | None]:
        """{tp: offset} -> {tp: LogAppendTime of the record there, or None}: read from its
        batch's header (one Fetch per leader for all of them; no record is decoded)."""
        return await log_append_times(self._cluster, {TopicPartition(*tp): offset
                                                      for tp, offset in offsets.items()})

    async def read_records(self, positions: dict, limit: int = 10
                           ) -> dict[TopicPartition, list[ConsumerRecord]]:
        """{tp: offset} -> {tp: up to ``limit`` records from that offset}: a look at a few
        records of many partitions, with no consumer, no group and no read ahead (one Fetch
        per leader per round, for about ``limit`` records a partition)."""
        if limit < 0:
            raise ValueError(f"limit must be >= 0, not {limit}")
        return await read_records(self._cluster, {TopicPartition(*tp): offset
                                                  for tp, offset in positions.items()}, limit)

    # --------------------------------------------------------------------- consumer groups

    async def list_consumer_groups(self) -> list[GroupListing]:
        """Every consumer group the coordinator (the controller) knows, sorted by id."""
        return await self._groups.list_groups()

    async def describe_consumer_groups(self, group_ids) -> dict[str, GroupDescription]:
        """{group id: GroupDescription} with state, epochs, assignor and each member's
        partitions. Raises GroupIdNotFoundError for a group the coordinator does not know."""
        return await self._groups.describe_groups(list(group_ids))

    async def list_consumer_group_offsets(self, group_id: str
                                          ) -> dict[TopicPartition, OffsetAndMetadata]:
        """Every committed offset of the group: {tp: OffsetAndMetadata(offset, metadata)}."""
        return await self._groups.committed(group_id)

    async def alter_consumer_group_offsets(self, group_id: str, offsets: dict) -> None:
        """Set committed offsets ({tp: offset}) of a group without live members.

        Raises:
            OffsetOutOfRangeError: an offset outside [log start, log end] (nothing changes).
            NonEmptyGroupError: the group has live members (nothing changes).
        """
        await self._groups.alter_offsets(group_id, offsets)

    async def delete_consumer_groups(self, group_ids) -> None:
        """Delete groups without members; NonEmptyGroupError for one that has members."""
        await self._groups.delete_groups(list(group_ids))

    # ------------------------------------------------------------------------------ ACLs

    async def create_acls(self, bindings) -> None:
        """Add ACLs (``AclBinding``s); one that exists already changes nothing. Needs Alter
        on the cluster, else ClusterAuthorizationFailedError."""
        await self._acls.create(list(bindings))

    async def describe_acls(self, acl_filter: AclBindingFilter = AclBindingFilter()
                            ) -> list[AclBinding]:
        """The ACLs the filter matches (default: all). Needs Describe on the cluster."""
        return await self._acls.describe(acl_filter)

    async def delete_acls(self, filters) -> list[AclBinding]:
        """Delete the ACLs any of the filters (one ``AclBindingFilter`` or several) matches;
        return them. Needs Alter on the cluster."""
        if isinstance(filters, AclBindingFilter):
            filters = [filters]
        return await self._acls.delete(list(filters))

    # ----------------------------------------------------------------------------- users

    async def create_user(self, name: str, password: str, mechanism: str = "SCRAM-SHA-512",
                          iterations: int = 8192) -> None:
        """Create SCRAM user ``name``, or give it a new password (an upsert: rotation).
        The password is salted and hashed here; only that reaches the broker. Raises
        UnacceptableCredentialError (iterations outside 4096..16384, an empty name)."""
        await self._users.create_user(name, password, mechanism, iterations)

    async def delete_user(self, name: str, mechanism: str | None = None) -> None:
        """Delete the user's credential of ``mechanism`` (None: all of them); its
        connections already open stay, new logins fail. ResourceNotFoundError if none."""
        await self._users.delete_user(name, mechanism)

    async def list_users(self) -> list[str]:
        """The names of every SCRAM user, sorted."""
        return sorted(await self._users.describe_users(None))

    async def describe_users(self, names=None) -> dict[str, list[ScramCredentialInfo]]:
        """{name: [ScramCredentialInfo(mechanism, iterations)]} of ``names`` (None: every
        user); ResourceNotFoundError for a named user without credentials."""
        return await self._users.describe_users(None if names is None else list(names))


def _failure(code: int, message: str | None, what: str) -> TslogError:
    """A refused admin request's error: the broker's message if it gave one, else the
    code's (``refused``), always after what was asked, so a denial names its object."""
    return error_for(code)(f"{what}: {message}") if message else refused(code, what)


def _keyed_by_partition(values: dict) -> dict:
    """``values`` with TopicPartition keys: as given when they are already (a console page
    asks about every partition of a topic, three times), else rebuilt from (topic, partition)
    pairs."""
    if set(map(type, values)) <= {TopicPartition}:
        return values
    return {TopicPartition(*tp): value for tp, value in values.items()}
