"""Kafka's JSON message schemas, compiled per (message, version) into decode/encode closures.

Why an interpreter of the vendored JSON (``schemas/``, copied unchanged from apache/kafka at
``clients/src/main/resources/common/message``, each keeping its Apache License header): those
files are what Kafka's own Java classes are generated from, so reading them is being "generated
from" the source of truth without a generator step or thousands of lines of per-API code to
review. Compiling each version once into a flat list of field closures keeps the per-message
cost to one Python call per field (the package docstring has the measurement against
kafka-python and ``kio``).

Rules implemented (Kafka's ``MessageGenerator``): a field exists in ``versions``; it is
nullable in ``nullableVersions``; in a flexible version strings, bytes, records and arrays use
the compact (unsigned varint length + 1) forms unless the field says ``"flexibleVersions":
"none"`` (the request header's client id), and every struct ends with a tagged-field section;
a field with ``taggedVersions`` is written there, under its ``tag``, only when it differs from
its default. Decoded messages are dicts keyed by the snake_case of Kafka's field names; on
encode a missing key takes the field's default and keys of fields the version lacks are
ignored. Tagged fields this schema does not know are skipped on decode.
"""

from __future__ import annotations

import functools
import json
import re
from importlib import resources

from . import primitives as p
from .errors import KafkaDecodeError

_COMMENT = re.compile(r"^\s*//.*$", re.MULTILINE)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def snake(name: str) -> str:
    """``ThrottleTimeMs`` -> ``throttle_time_ms``, ``IsrNodes`` -> ``isr_nodes``."""
    return _CAMEL.sub("_", name).lower()


class Versions:
    """A version range as the schemas spell it: ``"3+"``, ``"0-5"``, ``"7"`` or ``"none"``."""

    __slots__ = ("low", "high")

    def __init__(self, spec: str | None) -> None:
        if spec is None or spec == "none":
            self.low, self.high = 1, 0
        elif spec.endswith("+"):
            self.low, self.high = int(spec[:-1]), 1 << 15
        elif "-" in spec:
            low, high = spec.split("-")
            self.low, self.high = int(low), int(high)
        else:
            self.low = self.high = int(spec)

    def __contains__(self, version: int) -> bool:
        return self.low <= version <= self.high


@functools.cache
def load(name: str) -> dict:
    """The vendored schema ``name`` (e.g. ``"ProduceRequest"``), comments stripped."""
    text = resources.files(__package__).joinpath("schemas", f"{name}.json").read_text("utf-8")
    return json.loads(_COMMENT.sub("", text))


def _default(field: dict, kind: str, nullable: bool, structs: dict):
    """The value a missing key encodes as, and an absent tagged field decodes as."""
    raw = field.get("default")
    if raw == "null":
        return None
    if kind.startswith("[]"):
        return []
    if kind in ("int8", "int16", "uint16", "int32", "uint32", "int64"):
        return 0 if raw in (None, "") else int(str(raw), 0)
    if kind == "float64":
        return 0.0 if raw in (None, "") else float(raw)
    if kind == "bool":
        return str(raw).lower() == "true"
    if kind == "string":
        return "" if raw is None else str(raw)
    if kind in ("bytes", "records"):
        return None if kind == "records" and nullable else b""
    if kind == "uuid":
        return p.ZERO_UUID
    return None  # a struct: filled in by the caller from its fields' defaults


_SCALARS = {
    "int8": (p.read_int8, p.write_int8), "int16": (p.read_int16, p.write_int16),
    "uint16": (p.read_uint16, p.write_uint16), "int32": (p.read_int32, p.write_int32),
    "uint32": (p.read_uint32, p.write_uint32), "int64": (p.read_int64, p.write_int64),
    "float64": (p.read_float64, p.write_float64), "bool": (p.read_bool, p.write_bool),
    "uuid": (p.read_uuid, p.write_uuid),
}
_VARIABLE = {  # (compact, nullable) -> (read, write)
    "string": {(False, False): (p.read_string, p.write_string),
               (False, True): (p.read_nullable_string, p.write_nullable_string),
               (True, False): (p.read_compact_string, p.write_compact_string),
               (True, True): (p.read_compact_nullable_string, p.write_compact_nullable_string)},
    "bytes": {(False, False): (p.read_bytes, p.write_bytes),
              (False, True): (p.read_nullable_bytes, p.write_nullable_bytes),
              (True, False): (p.read_compact_bytes, p.write_compact_bytes),
              (True, True): (p.read_compact_nullable_bytes, p.write_compact_nullable_bytes)},
}
_VARIABLE["records"] = _VARIABLE["bytes"]


class Field:
    """One field of a struct compiled for one version: its dict key, reader, writer, default
    and, when it is written in the tagged section, its tag."""

    __slots__ = ("key", "read", "write", "default", "tag")

    def __init__(self, key, read, write, default, tag):
        self.key, self.read, self.write, self.default, self.tag = key, read, write, default, tag


def _struct_fields(field: dict, structs: dict) -> list[dict]:
    if "fields" in field:
        return field["fields"]
    name = field["type"].removeprefix("[]")
    return structs[name]["fields"]


def _compile_type(field: dict, kind: str, version: int, flexible: bool, structs: dict):
    """(read, write, default) of a value of ``kind`` in this field at ``version``."""
    nullable = version in Versions(field.get("nullableVersions"))
    compact = flexible and "none" != field.get("flexibleVersions")
    if kind.startswith("[]"):
        element = kind[2:]
        if element in _SCALARS or element in _VARIABLE:
            read_one, write_one, _ = _compile_type({}, element, version, flexible, structs)
        else:
            read_one, write_one = compile_struct(_struct_fields(field, structs), version,
                                                 flexible, structs)
        return (*_array(read_one, write_one, compact, nullable),
                _default(field, kind, nullable, structs))
    if kind in _SCALARS:
        read, write = _SCALARS[kind]
        return read, write, _default(field, kind, nullable, structs)
    if kind in _VARIABLE:
        read, write = _VARIABLE[kind][compact, nullable]
        return read, write, _default(field, kind, nullable, structs)
    fields = _struct_fields(field, structs)
    read, write = compile_struct(fields, version, flexible, structs)
    if nullable:
        return (*_nullable_struct(read, write), None)
    default = {f.key: f.default for f in _fields(fields, version, flexible, structs)}
    return read, write, default


def _array(read_one, write_one, compact: bool, nullable: bool):
    def read(buf, pos):
        count, pos = p.read_array_length(buf, pos, compact)
        if count is None:
            if not nullable:
                raise KafkaDecodeError(f"null array in a non-nullable field at byte {pos}")
            return None, pos
        items = []
        append = items.append
        for _ in range(count):
            item, pos = read_one(buf, pos)
            append(item)
        return items, pos

    def write(out, items):
        if items is None:
            if not nullable:
                raise ValueError("None for a non-nullable array")
            p.write_array_length(out, None, compact)
            return
        p.write_array_length(out, len(items), compact)
        for item in items:
            write_one(out, item)

    return read, write


def _nullable_struct(read_struct, write_struct):
    def read(buf, pos):
        marker, pos = p.read_int8(buf, pos)
        if marker < 0:
            return None, pos
        return read_struct(buf, pos)

    def write(out, value):
        if value is None:
            out.append(0xFF)
            return
        out.append(1)
        write_struct(out, value)

    return read, write


def _fields(fields: list[dict], version: int, flexible: bool, structs: dict) -> list[Field]:
    compiled = []
    for field in fields:
        tagged = flexible and version in Versions(field.get("taggedVersions"))
        if not tagged and version not in Versions(field.get("versions")):
            continue
        read, write, default = _compile_type(field, field["type"], version, flexible, structs)
        compiled.append(Field(snake(field["name"]), read, write, default,
                              field["tag"] if tagged else None))
    return compiled


def compile_struct(fields: list[dict], version: int, flexible: bool, structs: dict):
    """``(read, write)`` for a struct: ``read(buf, pos) -> (dict, pos)``,
    ``write(out, dict)``."""
    compiled = _fields(fields, version, flexible, structs)
    plain = [(f.key, f.read) for f in compiled if f.tag is None]
    plain_writers = [(f.key, f.write, f.default) for f in compiled if f.tag is None]
    tagged = {f.tag: f for f in compiled if f.tag is not None}

    if not flexible:
        def read(buf, pos):
            value = {}
            for key, read_field in plain:
                value[key], pos = read_field(buf, pos)
            return value, pos

        def write(out, value):
            get = value.get
            for key, write_field, default in plain_writers:
                write_field(out, get(key, default))

        return read, write

    def read(buf, pos):
        value = {}
        for key, read_field in plain:
            value[key], pos = read_field(buf, pos)
        raw_tags, pos = p.read_tagged_fields(buf, pos)
        for tag, f in tagged.items():
            raw = raw_tags.get(tag)
            if raw is None:
                value[f.key] = f.default
                continue
            value[f.key], end = f.read(raw, 0)
            if end != len(raw):
                raise KafkaDecodeError(f"tagged field {tag} has {len(raw) - end} extra bytes")
        return value, pos

    def write(out, value):
        get = value.get
        for key, write_field, default in plain_writers:
            write_field(out, get(key, default))
        raws = {}
        for tag, f in tagged.items():
            item = get(f.key, f.default)
            if item != f.default:
                raw = bytearray()
                f.write(raw, item)
                raws[tag] = raw
        p.write_tagged_fields(out, raws)

    return read, write


@functools.cache
def compiled(name: str, version: int):
    """``(read, write)`` of message ``name`` at ``version`` (cached: compiled once)."""
    schema = load(name)
    if version not in Versions(schema["validVersions"]):
        raise KeyError(f"{name} has no version {version}")
    structs = {s["name"]: s for s in schema.get("commonStructs", [])}
    _index_structs(schema["fields"], structs)
    flexible = version in Versions(schema.get("flexibleVersions"))
    return compile_struct(schema["fields"], version, flexible, structs)


def _index_structs(fields: list[dict], structs: dict) -> None:
    """Inline struct definitions by type name, for the rare field that names a struct defined
    inline elsewhere in the same message."""
    for field in fields:
        if "fields" in field:
            structs.setdefault(field["type"].removeprefix("[]"), field)
            _index_structs(field["fields"], structs)


def is_flexible(name: str, version: int) -> bool:
    return version in Versions(load(name).get("flexibleVersions"))


def valid_versions(name: str) -> tuple[int, int]:
    v = Versions(load(name)["validVersions"])
    return v.low, v.high


__all__ = ["Versions", "compiled", "is_flexible", "load", "snake", "valid_versions"]
