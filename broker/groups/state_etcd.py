"""Consumer-group coordinator state of a cluster, kept in etcd and written by the controller.

Why etcd: the coordinator of every group is the controller, and the controller moves when its
broker dies. The state a heartbeat's answer hands out (member ids, epochs, assignments) must
be where the next controller finds it, so a member carries on there with the epoch it has
instead of rejoining; etcd is already the cluster's durable, replicated store.

Layout: one key per group, ``/<cluster>/consumer_groups/<sha1 of group id>``, holding the
coordinator's ``group_record`` as JSON (the same document a single broker keeps in
``DATA_DIR/__meta/consumer_groups/``). Hashing keeps any group id a single key segment.

Fencing: every write and delete is a transaction that also compares the ``controller`` key's
create_revision with the controller epoch this store was made for. A deposed controller
(its lease expired, another broker won the election) still running a heartbeat or an expiry
fails its write instead of overwriting what its successor wrote; the caller answers
COORDINATOR_NOT_AVAILABLE and the member finds the new coordinator.

Only the controller reads these keys (``load`` when it takes over), so no broker caches them.
"""

from __future__ import annotations

import json
import logging

from ..cluster.etcd import Etcd, EtcdError
from ..cluster.records import ClusterKeys
from .offset_etcd import group_hash

log = logging.getLogger("tslog.broker.groups")


class FencedWriteError(OSError):
    """This broker's controller epoch is over: another broker coordinates the groups now."""


class EtcdGroupStateStore:
    """``GroupStateStore``'s interface (``load``, ``write``, ``delete``) over etcd, as
    coroutines, for the controller of one controller epoch. Every failure is an OSError
    (``FencedWriteError`` when the epoch is over)."""

    def __init__(self, etcd: Etcd, keys: ClusterKeys, controller_epoch: int) -> None:
        self.etcd = etcd
        self.keys = keys
        self.epoch = controller_epoch  # create_revision of the controller key we hold

    def _key(self, group_id: str) -> str:
        return self.keys.group_state(group_hash(group_id))

    async def load(self) -> list[dict]:
        """Every stored group record; an undecodable value is logged and left out."""
        try:
            _, kvs = await self.etcd.get_prefix(self.keys.group_states)
        except EtcdError as exc:
            raise OSError(str(exc)) from None
        records = []
        for kv in kvs:
            try:
                record = json.loads(kv.value)
            except ValueError:
                log.error("ignoring undecodable consumer group state %s", kv.key)
                continue
            if isinstance(record, dict):
                records.append(record)
            else:
                log.error("ignoring consumer group state %s: not a JSON object", kv.key)
        return records

    async def write(self, group_id: str, record: dict) -> None:
        """Store one group's record if we are still the controller of our epoch."""
        value = json.dumps(record, sort_keys=True, separators=(",", ":")).encode()
        await self._fenced(self.etcd.put(self._key(group_id), value), group_id)

    async def delete(self, group_id: str) -> None:
        """Forget one group (a deleted group) if we are still the controller of our epoch."""
        await self._fenced(self.etcd.delete(self._key(group_id)), group_id)

    async def _fenced(self, operation, group_id: str) -> None:
        try:
            ok, _ = await self.etcd.txn(
                [self.etcd.created_at(self.keys.controller, self.epoch)], [operation])
        except EtcdError as exc:
            raise OSError(str(exc)) from None
        if not ok:
            raise FencedWriteError(f"consumer group {group_id!r} not written: controller "
                                   f"epoch {self.epoch} is over")
