"""Consumer-group coordinator state of a single broker, durable before a heartbeat is answered.

Layout: one JSON file per group, ``DATA_DIR/__meta/consumer_groups/<sha1 of group id>.json``,
holding the coordinator's ``group_record`` (members, epochs, assignments), replaced atomically
(temp file, fsync, rename, directory fsync) as committed offsets are (``offset_files.py``).

Why durable before answering: a heartbeat's answer hands a member partitions and an epoch; a
broker restarted from an older state would hand the same partitions to another member while
the first still reads them, or fence a member for an epoch it was given. With the state
written first, a restart resumes exactly where the answers left the members (sessions and
revocation deadlines restart at the restart's time, ``GroupCoordinator.restore_group``).
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

from ..metadata import META_DIR
from ..storage.files import fsync_directory, write_atomically

log = logging.getLogger("tslog.broker.groups")

STATE_DIR = "consumer_groups"


class GroupStateStore:
    """Owner: the event loop; ``write`` and ``delete`` run in a worker thread, one call per
    group at a time (the caller serialises them)."""

    def __init__(self, data_dir: Path) -> None:
        self.directory = Path(data_dir) / META_DIR / STATE_DIR
        self.directory.mkdir(parents=True, exist_ok=True)

    def _path(self, group_id: str) -> Path:
        return self.directory / (hashlib.sha1(group_id.encode()).hexdigest() + ".json")

    def load(self) -> list[dict]:
        """Every stored group record; an unreadable file is logged and left out."""
        records = []
        for path in sorted(self.directory.glob("*.json")):
            try:
                records.append(json.loads(path.read_text(encoding="utf-8")))
            except (OSError, ValueError):
                log.exception("unreadable consumer group state %s; ignoring it", path)
        return records

    def write(self, group_id: str, record: dict) -> None:
        """Store one group's record durably. Slow (fsync). Raises OSError."""
        write_atomically(self._path(group_id), json.dumps(record, sort_keys=True).encode())

    def delete(self, group_id: str) -> None:
        """Forget one group durably (a deleted group). Raises OSError."""
        self._path(group_id).unlink(missing_ok=True)
        fsync_directory(self.directory)
