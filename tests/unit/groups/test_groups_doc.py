"""docs/groups.md says what the coordinator does: its error-code table and its defaults are
checked against the code, and it holds no example code that nothing would run."""

from __future__ import annotations

import re
from pathlib import Path

from tslog.broker.groups import CoordinatorConfig, GroupState
from tslog.protocol.errors import ErrorCode

DOC = (Path(__file__).resolve().parents[3] / "docs" / "groups.md").read_text(encoding="utf-8")


def test_error_code_table_matches_the_codes():
    rows = re.findall(r"^\| (-?\d+) \| `([A-Z_]+)` \|", DOC, flags=re.M)
    assert len(rows) >= 9
    for number, name in rows:
        assert int(ErrorCode[name]) == int(number), name
    group_codes = {"UNKNOWN_MEMBER_ID", "NON_EMPTY_GROUP", "GROUP_MAX_SIZE_REACHED",
                   "FENCED_MEMBER_EPOCH", "STALE_MEMBER_EPOCH", "GROUP_ID_NOT_FOUND"}
    assert group_codes <= {name for _, name in rows}


def test_defaults_in_the_doc_are_the_configs():
    config = CoordinatorConfig()
    assert f"| {config.session_timeout_ms:,} ms |".replace(",", " ") in DOC
    assert f"| {config.rebalance_timeout_ms:,} ms |".replace(",", " ") in DOC
    # The doc names the broker settings (group_*), whose defaults are the coordinator's.
    assert (f"`group_heartbeat_interval_ms` ({config.heartbeat_interval_ms:,} ms)"
            .replace(",", " ") in DOC)
    assert f"`group_max_size` members ({config.group_size_max:,})".replace(",", " ") in DOC


def test_every_group_state_is_described_and_no_code_blocks():
    for state in GroupState:
        assert f"| `{state.value}` |" in DOC
    assert "```" not in DOC
