"""A cluster's SCRAM credentials in etcd, followed by every broker (see ``credentials.py``).

Layout: ``/<cluster>/scram_credentials/<name>``, one JSON document per user (mechanism ->
salt, keys, iterations), so creating, rotating or deleting a user is one etcd write. Every
broker loads the prefix at start and follows it with a watch (``follow_prefix``, which
re-reads the whole prefix after a broken watch), so its map is the cluster's within the
watch's delay; the broker that wrote a change applies it to its own map at once.

The decoy salts' secret (``decoy.py``) is ``/<cluster>/scram_decoy_secret``, written once by
whichever broker starts first (a transaction: only if absent), so every broker gives an
unknown name the same salt.
"""

from __future__ import annotations

import json
import logging

from ..cluster.etcd import Etcd, PrefixFollower, WatchEvent
from .credentials import CredentialStore, ScramCredential, decode_user, encode_user
from .decoy import new_secret

log = logging.getLogger("tslog.broker.security")


class EtcdCredentialStore(PrefixFollower, CredentialStore):
    what = "SCRAM credentials"

    def __init__(self, etcd: Etcd, cluster_prefix: str) -> None:
        super().__init__()
        self.etcd = etcd
        self.prefix = cluster_prefix + "scram_credentials/"
        self.decoy_key = cluster_prefix + "scram_decoy_secret"

    async def start(self) -> None:
        """Load and follow the users, and take the cluster's decoy secret (made if none)."""
        await super().start()
        etcd, key = self.etcd, self.decoy_key
        await etcd.txn([etcd.absent(key)], [etcd.put(key, new_secret())])
        stored = await etcd.get(key)
        if stored is not None:
            self.decoy_secret = stored.value

    async def _resync(self) -> int:
        revision, kvs = await self.etcd.get_prefix(self.prefix)
        users = {}
        for kv in kvs:
            name, credentials = self._decode(kv.key, kv.value)
            if credentials:
                users[name] = credentials
        self.users = users
        return revision

    def _decode(self, key: str, value: bytes) -> tuple[str, dict[str, ScramCredential]]:
        name = key[len(self.prefix):]
        try:
            return name, decode_user(json.loads(value))
        except (ValueError, KeyError, TypeError):
            log.error("undecodable SCRAM credentials of user %r in etcd; ignored", name)
            return name, {}

    def _on_event(self, event: WatchEvent) -> None:
        name, credentials = (event.kv.key[len(self.prefix):], {}) if event.deleted else \
            self._decode(event.kv.key, event.kv.value)
        users = dict(self.users)
        if credentials:
            users[name] = credentials
        else:
            users.pop(name, None)
        self.users = users

    async def _store(self, users, names) -> None:
        operations = []
        for name in sorted(names):
            key = self.prefix + name
            if name in users:
                operations.append(self.etcd.put(key, json.dumps(encode_user(users[name]))
                                                .encode()))
            else:
                operations.append(self.etcd.delete(key))
        await self.etcd.txn([], operations)
