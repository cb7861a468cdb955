"""A schema error quotes at most a bounded prefix of what the peer sent: the message is
logged by the broker and sent back, so a megabyte key or value must not be copied into it."""

from __future__ import annotations

import pytest

from tslog.protocol.schema import SHOWN_CHARS, STR, Choice, MapOf, SchemaError, Struct


@pytest.mark.parametrize("schema, value", [
    (Choice("a", "b"), "x" * 1_000_000),
    (Struct({"k": STR}), {"k": "v", "y" * 1_000_000: 1}),
    (MapOf(STR), {b"z" * 1_000_000: "v"}),
])
def test_a_huge_value_is_quoted_by_a_bounded_prefix(schema, value):
    with pytest.raises(SchemaError) as raised:
        schema.check(value)
    assert len(str(raised.value)) < SHOWN_CHARS + 200
