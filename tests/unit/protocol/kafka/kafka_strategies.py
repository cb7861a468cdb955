"""Hypothesis strategies for Kafka message bodies, derived from the vendored JSON schemas.

Each field present in a version (tagged ones too) gets a value of its type; nullable fields
sometimes None. The walk mirrors Kafka's rules, not the codec's code, so a codec mistake in
which fields exist when shows up as a round-trip or oracle failure.
"""

from __future__ import annotations

import uuid

from hypothesis import strategies as st

from tslog.protocol.kafka import schema


def scaled(count: int) -> int:
    """``count`` examples, under every profile: these tests are parametrized over hundreds
    of API versions (each already a case of its own), and five times as many examples under
    CI's profile cost three minutes of a CI run held under thirty."""
    return max(1, count)


INT_RANGES = {"int8": 7, "int16": 15, "int32": 31, "int64": 63}
SMALL = {"max_size": 2}


def _scalar(kind: str):
    if kind in INT_RANGES:
        bits = INT_RANGES[kind]
        return st.integers(-(1 << bits), (1 << bits) - 1)
    if kind == "uint16":
        return st.integers(0, 0xFFFF)
    if kind == "uint32":
        return st.integers(0, 0xFFFFFFFF)
    if kind == "bool":
        return st.booleans()
    if kind == "float64":
        return st.floats(allow_nan=False)
    if kind == "uuid":
        return st.builds(uuid.UUID, int=st.integers(0, (1 << 128) - 1))
    if kind == "string":
        return st.text(max_size=8)
    if kind in ("bytes", "records"):
        return st.binary(max_size=8)
    return None


def _value(field: dict, kind: str, version: int, flexible: bool, structs: dict):
    nullable = version in schema.Versions(field.get("nullableVersions"))
    if kind.startswith("[]"):
        element = kind[2:]
        inner = _scalar(element)
        if inner is None:
            inner = _struct(_fields_of(field, element, structs), version, flexible, structs)
        strategy = st.lists(inner, **SMALL)
    else:
        strategy = _scalar(kind)
        if strategy is None:
            strategy = _struct(_fields_of(field, kind, structs), version, flexible, structs)
    return st.one_of(st.none(), strategy) if nullable else strategy


def _fields_of(field: dict, name: str, structs: dict) -> list[dict]:
    return field["fields"] if "fields" in field else structs[name]["fields"]


def _struct(fields: list[dict], version: int, flexible: bool, structs: dict):
    members = {}
    for field in fields:
        tagged = flexible and version in schema.Versions(field.get("taggedVersions"))
        if tagged or version in schema.Versions(field.get("versions")):
            members[schema.snake(field["name"])] = _value(field, field["type"], version,
                                                          flexible, structs)
    return st.fixed_dictionaries(members)


def body(name: str, version: int):
    """Bodies of message ``name`` (e.g. ``"FetchResponse"``) at ``version``."""
    doc = schema.load(name)
    structs = {s["name"]: s for s in doc.get("commonStructs", [])}
    _index(doc["fields"], structs)
    return _struct(doc["fields"], version, schema.is_flexible(name, version), structs)


def _index(fields, structs):
    for field in fields:
        if "fields" in field:
            structs.setdefault(field["type"].removeprefix("[]"), field)
            _index(field["fields"], structs)
