"""HTTP Basic credentials as the broker's /metrics and the console read them: any bytes in a
header give credentials or None, never an exception; what a browser sends round-trips."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tslog.protocol.http_basic import basic_credentials


def _header(user: str, password: str, scheme: str = "Basic") -> str:
    return f"{scheme} " + base64.b64encode(f"{user}:{password}".encode()).decode()


@given(user=st.text().filter(lambda u: ":" not in u), password=st.text(),
       scheme=st.sampled_from(["Basic", "basic", "BASIC"]))
def test_what_a_client_sends_round_trips(user, password, scheme):
    assert basic_credentials(_header(user, password, scheme)) == (user, password)


@given(st.text())
def test_any_header_gives_credentials_or_none(header):
    found = basic_credentials(header)
    assert found is None or (isinstance(found[0], str) and isinstance(found[1], str))


@pytest.mark.parametrize("header", [
    None, "", "Basic", "Bearer abc", "Basic !!!", _header("a", "b", "Digest"),
    "Basic " + base64.b64encode(b"no colon").decode(),
    "Basic " + base64.b64encode(b"\xff\xfe:x").decode()])
def test_other_schemes_and_malformed_headers_give_none(header):
    assert basic_credentials(header) is None
