"""The console's parts that need no cluster: the users file and its hashes, the login gate,
loopback detection (protected mode), bucket edges of the traffic chart, positions in paging
URLs, value previews, and that every value put on a page is escaped."""

from __future__ import annotations

import base64

import pytest

from tslog.client.console.auth import (Authenticator, UsersFileError, hash_password,
                                       is_loopback, load_users, verify)
from tslog.client.console.command import protected_mode_problem
from tslog.client.console.html import Markup, table
from tslog.client.console.records import format_positions, parse_positions, preview
from tslog.client.console.traffic import BUCKETS_MAX, WindowError, boundaries


def _basic(name: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{name}:{password}".encode()).decode()


def test_hashes_verify_their_password_only_and_never_contain_it():
    encoded = hash_password("s3cret-pass", iterations=1000)
    assert "s3cret-pass" not in encoded
    assert verify("s3cret-pass", encoded) and not verify("s3cret-pasS", encoded)
    assert hash_password("s3cret-pass", iterations=1000) != encoded  # salted


def test_users_file_lines_are_checked_and_errors_name_the_line_not_the_hash(tmp_path):
    path = tmp_path / "users"
    good = hash_password("pw", iterations=1000)
    path.write_text(f"# operators\nops:{good}\n\n")
    assert load_users(path) == {"ops": good}
    path.write_text("ops:plaintext-password\n")
    with pytest.raises(UsersFileError, match="line 1") as caught:
        load_users(path)
    assert "plaintext-password" not in str(caught.value)
    path.write_text("# nobody\n")
    with pytest.raises(UsersFileError, match="names no user"):
        load_users(path)


def test_the_login_gate_accepts_the_right_password_only():
    gate = Authenticator({"ops": hash_password("pw", iterations=1000)})
    assert gate.user(_basic("ops", "pw")) == "ops"
    assert gate.user(_basic("ops", "pw")) == "ops"  # remembered, same answer
    assert gate.user(_basic("ops", "wrong")) is None
    assert gate.user(_basic("eve", "pw")) is None
    assert gate.user(None) is None and gate.user("Bearer x") is None
    assert gate.user("Basic !!!") is None


@pytest.mark.parametrize("host, loopback", [
    ("127.0.0.1", True), ("127.0.0.2", True), ("::1", True), ("[::1]", True),
    ("localhost", True), ("0.0.0.0", False), ("::", False), ("10.0.0.5", False),
    ("console.example", False)])
def test_loopback_is_told_apart(host, loopback):
    assert is_loopback(host) is loopback
    assert (protected_mode_problem(host, None) is None) is loopback
    assert protected_mode_problem(host, "users-file") is None


def test_bucket_edges_are_aligned_and_bounded():
    assert boundaries(1_500, 3_200, 1000) == [1000, 2000, 3000, 4000]
    assert boundaries(60_000, 60_000, 60_000) == [60_000, 120_000]
    with pytest.raises(WindowError):
        boundaries(2000, 1000, 1000)
    with pytest.raises(WindowError, match=str(BUCKETS_MAX)):
        boundaries(0, 86_400_000, 1000)  # a day by second


def test_positions_round_trip():
    assert parse_positions(format_positions({2: 40, 0: 12})) == {0: 12, 2: 40}
    assert parse_positions("") == {}
    with pytest.raises(ValueError):
        parse_positions("0:x")


def test_previews():
    assert preview(None, "text") == "null"
    assert preview(b"ab", "hex") == "61 62"
    assert preview(b'{"a":1}', "json") == '{\n "a": 1\n}'
    assert preview(b"not json", "json").endswith("(not JSON)")
    assert preview(b"x" * 1000, "text").endswith("(1000 bytes)")


def test_tables_escape_what_they_did_not_build():
    html = table(["<h>"], [("<script>alert(1)</script>",), (Markup("<b>ok</b>"),)])
    assert "<script>" not in html and "&lt;script&gt;" in html and "<b>ok</b>" in html


def test_sizes_are_read_from_a_metrics_exposition():
    from tslog.client.console.sizes import parse_sizes

    text = ('# HELP tslog_log_size_bytes Bytes.\n'
            'tslog_log_size_bytes{partition="0",topic="events"} 4096.0\n'
            'tslog_log_size_bytes{partition="1",topic="events"} 10\n'
            'tslog_log_size_bytes{partition="0",topic="other"} 7\n'
            'tslog_log_segments{partition="0",topic="events"} 1\n')
    assert parse_sizes(text, "events") == {0: 4096, 1: 10}
