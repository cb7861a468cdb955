"""docs/protocol.md covers the wire as the schemas define it: every API has its section,
headed by its name and api key, and that section names every field of the API's request and
response in every version the broker speaks. A field added to a schema without a word in the
protocol document fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tslog.protocol.messages import REQUEST_SCHEMAS, RESPONSE_SCHEMAS, ApiKey
from tslog.protocol.schema import ListOf, MapOf, Nullable, Struct

PROTOCOL_MD = Path(__file__).resolve().parents[3] / "docs" / "protocol.md"


def sections() -> dict[int, str]:
    """api key -> the text of its ``### Name (key)`` section."""
    text = PROTOCOL_MD.read_text()
    found = {}
    heads = list(re.finditer(r"^### (\w+) \((\d+)\)$", text, re.MULTILINE))
    for head, following in zip(heads, heads[1:] + [None]):
        end = following.start() if following else text.find("\n## ", head.end())
        found[int(head.group(2))] = (head.group(1), text[head.end():end])
    return found


def field_names(schema) -> set[str]:
    if isinstance(schema, Struct):
        names = set(schema.fields)
        for inner in schema.fields.values():
            names |= field_names(inner)
        return names
    if isinstance(schema, Nullable):
        return field_names(schema.inner)
    if isinstance(schema, ListOf):
        return field_names(schema.item)
    if isinstance(schema, MapOf):
        return field_names(schema.value)
    return set()


def camel(api: ApiKey) -> str:
    return "".join(word.capitalize() for word in api.name.split("_"))


@pytest.mark.parametrize("api", list(ApiKey), ids=lambda api: api.name.lower())
def test_every_api_has_a_section_naming_all_its_fields(api):
    documented = sections()
    assert int(api) in documented, f"docs/protocol.md has no '### ... ({int(api)})' section"
    name, text = documented[int(api)]
    assert name.lower() == camel(api).lower()
    fields = set()
    for table in (REQUEST_SCHEMAS, RESPONSE_SCHEMAS):
        for (key, _version), schema in table.items():
            if key == api:
                fields |= field_names(schema)
    missing = sorted(f for f in fields if f'"{f}"' not in text)
    assert not missing, f"{name}: fields not in docs/protocol.md: {missing}"
