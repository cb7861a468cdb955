"""docs/kafka.md's "Consumer groups" section says what the classic coordinator does: its
error-code table and the limits it names are checked against the code (its example runs in
tests/integration/kafka/test_kafka_groups.py)."""

from __future__ import annotations

import re
from pathlib import Path

from tslog.broker.groups.classic import ClassicConfig
from tslog.protocol.errors import ErrorCode

TEXT = (Path(__file__).resolve().parents[3] / "docs" / "kafka.md").read_text(encoding="utf-8")
SECTION = TEXT[TEXT.index("\n## Consumer groups\n"):]


def test_error_code_table_matches_the_codes():
    rows = re.findall(r"^\| (\d+) \| `([A-Z_]+)` \|", SECTION, flags=re.M)
    assert len(rows) >= 10
    for number, name in rows:
        assert int(ErrorCode[name]) == int(number), name


def test_the_limits_named_are_the_defaults():
    config = ClassicConfig()
    assert (f"outside {config.min_session_timeout_ms:,} – {config.max_session_timeout_ms:,} ms"
            .replace(",", " ") in SECTION)
    assert f"the group has {config.group_max_size:,} members".replace(",", " ") in SECTION
