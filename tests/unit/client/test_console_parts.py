"""The console's parts that need no cluster: the users file and its hashes, the login gate,
loopback detection (protected mode), bucket edges and counts of the traffic chart, what a
page of charts formats, times on pages, positions in paging URLs, value previews, and that
every value put on a page is escaped."""

from __future__ import annotations

import base64
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tslog.client.console.auth import (Authenticator, UsersFileError, hash_password,
                                       is_loopback, load_users, verify)
from tslog.client.console.command import protected_mode_problem
from tslog.client.console import charts
from tslog.client.console.html import Markup, table, when
from tslog.client.console.records import format_positions, parse_positions, preview
from tslog.client.console.traffic import BUCKETS_MAX, WindowError, boundaries, bucket_counts


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


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


@given(st.integers(0, 253_402_300_799_999) | st.none())
def test_times_on_pages_are_exact_to_the_millisecond(ms):
    """``when`` formats the second once and appends the milliseconds; the oracle is exact
    integer arithmetic (``format_time_ms`` divides a float, off by one near year 9999)."""
    expected = "-" if ms is None else (_EPOCH + timedelta(milliseconds=ms)).isoformat(
        timespec="milliseconds").replace("+00:00", "Z")
    assert when(ms) == expected


@given(st.integers(1, 40).flatmap(lambda edges: st.tuples(
    st.just(edges), st.lists(st.tuples(st.lists(st.integers(-1, 50), min_size=edges,
                                                max_size=edges), st.integers(0, 60)),
                             max_size=6))))
def test_bucket_counts_match_a_count_per_edge(case):
    """The column-wise counts against the definition, one bucket at a time."""
    edges, partitions = case
    offsets, ends = [o for o, _ in partitions], [e for _, e in partitions]
    expected = []
    for column, end in partitions:
        at = [end if offset < 0 else offset for offset in column]
        expected.append([max(0, later - earlier) for earlier, later in zip(at, at[1:])])
    counts = bucket_counts(offsets, ends, edges)
    assert counts.shape == (len(partitions), edges - 1)
    assert counts.tolist() == expected


def test_a_page_of_charts_formats_each_bucket_once(monkeypatch):
    """A topic page draws the topic's chart and up to 64 partitions' over the same buckets:
    each bucket's time is formatted once per window, not once per chart (counted)."""
    formatted = []
    monkeypatch.setattr(charts, "format_time_ms", lambda ms: formatted.append(ms) or str(ms))
    charts._frame.cache_clear()
    charts._time_label.cache_clear()
    starts = [1_764_000_000_000 + i * 60_000 for i in range(60)]
    html = "".join(charts.bar_chart(starts, [p + i for i in range(60)],
                                    f"/find?topic=t&partition={p}", f"partition {p}")
                   for p in range(65))
    assert sorted(formatted) == starts
    assert html.count('class="bar"') == 65 * 60
    assert f'href="/find?topic=t&amp;partition=7&amp;time={starts[3]}"' in html
    assert f"<title>{starts[3]}: 10 records</title>" in html  # partition 7, bucket 3
    charts._frame.cache_clear()
    charts._time_label.cache_clear()
