"""A cluster's ACLs, kept in etcd and followed by every broker.

Layout: one key per binding, ``/<cluster>/acls/<sha1 of the binding>``, holding the binding
as a JSON array. One key per binding (not one document) means two brokers adding different
ACLs at once can never overwrite each other, and adding one that exists already is a no-op.

Every broker watches the prefix and swaps its authorizer's in-memory copy on each change,
so an ACL added through any broker is enforced by all of them as soon as etcd's watch
delivers it (milliseconds). The broker that made a change applies it at once, before
answering, so its own next request already sees it.
"""

from __future__ import annotations

import hashlib
import json
import logging

from .acl import ANY_HOST, AclBinding, Authorizer
from ..cluster.etcd import Etcd, EtcdError, PrefixFollower, WatchEvent

log = logging.getLogger("tslog.broker.security")

MAX_TXN_OPS = 128  # etcd's default --max-txn-ops


def _encode(binding: AclBinding) -> bytes:
    """The binding as a JSON array; without its host when that is "*", so bindings stored
    before ACLs had hosts keep their keys (``binding_key_suffix``) and decode the same."""
    fields = list(binding) if binding.host != ANY_HOST else list(binding)[:-1]
    return json.dumps(fields).encode()


def binding_key_suffix(binding: AclBinding) -> str:
    return hashlib.sha1(_encode(binding)).hexdigest()


class EtcdAclStore(PrefixFollower):
    """``add``/``remove`` in etcd; ``start`` loads the set and keeps following it."""

    what = "ACLs"

    def __init__(self, etcd: Etcd, cluster_name: str, authorizer: Authorizer) -> None:
        self.etcd = etcd
        self.prefix = f"/{cluster_name}/acls/"
        self.authorizer = authorizer
        self._by_key: dict[str, AclBinding] = {}
        self._revisions: dict[str, int] = {}  # newest revision seen per key (puts and deletes)

    async def add(self, bindings: set[AclBinding]) -> None:
        """Raises OSError when etcd cannot take them."""
        keyed = {self.prefix + binding_key_suffix(b): b for b in bindings}
        revision = await self._write([self.etcd.put(key, _encode(b)) for key, b in keyed.items()])
        for key, binding in keyed.items():
            self._apply(key, binding, revision)
        self._publish()

    async def remove(self, bindings: set[AclBinding]) -> None:
        """Raises OSError when etcd cannot take it."""
        keys = [self.prefix + binding_key_suffix(b) for b in bindings]
        revision = await self._write([self.etcd.delete(key) for key in keys])
        for key in keys:
            self._apply(key, None, revision)
        self._publish()

    async def _write(self, operations: list) -> int:
        revision = 0
        try:  # etcd caps a transaction's operations: many ACLs go in chunks
            for start in range(0, len(operations), MAX_TXN_OPS):
                _, revision = await self.etcd.txn([], operations[start:start + MAX_TXN_OPS])
        except EtcdError as exc:
            raise OSError(str(exc)) from None
        return revision

    def _apply(self, key: str, binding: AclBinding | None, revision: int) -> None:
        """Take a put (``binding``) or a delete (None) unless a newer one was seen."""
        if self._revisions.get(key, 0) > revision:
            return
        self._revisions[key] = revision
        if binding is None:
            self._by_key.pop(key, None)
        else:
            self._by_key[key] = binding

    def _publish(self) -> None:
        self.authorizer.replace(self._by_key.values())

    async def _resync(self) -> int:
        revision, kvs = await self.etcd.get_prefix(self.prefix)
        by_key, revisions = {}, {}
        for kv in kvs:
            binding = self._decode(kv.key, kv.value)
            if binding is not None:
                by_key[kv.key] = binding
                revisions[kv.key] = kv.mod_revision
        self._by_key, self._revisions = by_key, revisions
        self._publish()
        return revision

    def _on_event(self, event: WatchEvent) -> None:
        binding = None if event.deleted else self._decode(event.kv.key, event.kv.value)
        if binding is None and not event.deleted:
            return
        self._apply(event.kv.key, binding, event.kv.mod_revision)
        self._publish()

    @staticmethod
    def _decode(key: str, value: bytes) -> AclBinding | None:
        try:
            row = json.loads(value)
            if not (isinstance(row, list) and len(row) == 6
                    and all(isinstance(v, str) for v in row)):
                raise ValueError("not six strings")
            return AclBinding(*row)
        except ValueError:
            log.warning("ignoring malformed ACL key %s", key)
            return None
