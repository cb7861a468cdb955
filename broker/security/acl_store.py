"""Where a single broker keeps its ACLs, and the service every ACL change goes through.

Single node: ``DATA_DIR/__meta/acls.json``, ``{"version": 1, "acls": [[principal,
resource_type, pattern_type, resource_name, operation, permission(, host)], ...]}`` (the
host only when a binding names one), replaced
atomically (temp file, fsync, rename) like the group offsets' files, so a crash leaves the
old set or the new one. A cluster keeps them in etcd instead
(``etcd_acls.EtcdAclStore``, the same ``add``/``remove``).

Either way the broker evaluates from memory: ``Authorizer.replace`` is called with the new
set once it is durable (and, in a cluster, on every change the watch reports), so a check
never waits for a disk or for etcd.
"""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Iterable, Protocol

from tslog.protocol.errors import ErrorCode

from ..metadata import META_DIR
from ..storage.files import write_atomically
from .acl import ANY_HOST, AclBinding, AclFilter, Authorizer, binding_problem

log = logging.getLogger("tslog.broker.security")

ACLS_FILE = "acls.json"


class AclStore(Protocol):
    async def add(self, bindings: set[AclBinding]) -> None: ...

    async def remove(self, bindings: set[AclBinding]) -> None: ...

    async def close(self) -> None: ...


class LocalAclStore:
    """The single node's ACL file. Changes are serialized (one lock), the fsyncs run in a
    worker thread, and the authorizer sees the new set once it is on disk."""

    def __init__(self, data_dir: Path, authorizer: Authorizer) -> None:
        self.path = Path(data_dir) / META_DIR / ACLS_FILE
        self.authorizer = authorizer
        self._lock = asyncio.Lock()
        authorizer.replace(self._load())

    def _load(self) -> set[AclBinding]:
        try:
            document = json.loads(self.path.read_text(encoding="utf-8"))
            return {AclBinding(*row) for row in document["acls"]}
        except FileNotFoundError:
            return set()
        except (OSError, ValueError, KeyError, TypeError) as exc:
            # Refusing to start is safer than starting with no ACLs (which may allow all).
            raise OSError(f"unreadable ACL file {self.path}: {exc}") from None

    def _write(self, bindings: frozenset[AclBinding]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(self.path, json.dumps(
            {"version": 1, "acls": sorted(_row(b) for b in bindings)}, indent=1).encode())

    async def _replace(self, bindings: frozenset[AclBinding]) -> None:
        await asyncio.to_thread(self._write, bindings)
        self.authorizer.replace(bindings)

    async def add(self, bindings: set[AclBinding]) -> None:
        async with self._lock:
            await self._replace(self.authorizer.bindings | bindings)

    async def remove(self, bindings: set[AclBinding]) -> None:
        async with self._lock:
            await self._replace(self.authorizer.bindings - bindings)

    async def close(self) -> None:
        return None


class AclService:
    """CreateAcls, DescribeAcls and DeleteAcls over the broker's store."""

    def __init__(self, authorizer: Authorizer, store: AclStore | None) -> None:
        self.authorizer = authorizer
        self.store = store  # None until a clustered broker's etcd store is started

    def describe(self, acl_filter: AclFilter) -> list[AclBinding]:
        return sorted(b for b in self.authorizer.bindings if acl_filter.matches(b))

    async def create(self, bindings: list[AclBinding]) -> list[tuple[int, str | None]]:
        """(error code, message) per binding; the valid ones are stored together."""
        results, valid = [], set()
        for binding in bindings:
            problem = binding_problem(binding)
            if problem is None:
                valid.add(binding)
                results.append((0, None))
            else:
                results.append((int(ErrorCode.INVALID_REQUEST), problem))
        if valid:
            try:
                await self.store.add(valid)
            except OSError as exc:
                log.error("cannot store ACLs: %s", exc)
                return [(int(ErrorCode.KAFKA_STORAGE_ERROR), "the ACLs could not be stored")
                        if code == 0 else (code, message) for code, message in results]
        return results

    async def delete(self, filters: Iterable[AclFilter]) -> list[list[AclBinding]]:
        """The bindings each filter matched, all deleted together. Raises OSError."""
        matched = [self.describe(acl_filter) for acl_filter in filters]
        gone = {b for found in matched for b in found}
        if gone:
            await self.store.remove(gone)
        return matched

    async def close(self) -> None:
        if self.store is not None:
            await self.store.close()


def _row(binding: AclBinding) -> list[str]:
    """A binding as stored: its host only when it names one (older files have none)."""
    return list(binding) if binding.host != ANY_HOST else list(binding)[:-1]
