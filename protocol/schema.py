"""A tiny declarative schema language for msgpack message bodies.

Why declarative: one table per API (in ``messages.py``) is the single place that says what a
request or response may contain. The same table drives validation here, the broker's and the
client's checks, and the tests' hypothesis strategies, so the three can never disagree.

Why hand-written instead of a library: validation runs on every request, on the hot path. A
body is walked once, O(fields x partitions); never per record, because records travel as one
opaque ``bin``. Success costs one ``isinstance``/``type`` check per value and no allocation;
the path of a failure (``topics[0].partitions[2].partition``) is assembled only while a
``SchemaError`` propagates.

Integers are Python ints that are not bools (``True`` is an ``int`` subclass; a msgpack
``true`` where a number belongs is a schema violation, not 1). Sequences may be lists or
tuples and bins may be bytes, bytearray or memoryview, so a sender can validate what it is
about to pack; msgpack itself only ever decodes lists and bytes.
"""

from __future__ import annotations

import itertools

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


class SchemaError(Exception):
    """A value does not match its schema. ``path`` locates it inside the body."""

    def __init__(self, problem: str, path: str = "") -> None:
        super().__init__(problem)
        self.problem = problem
        self.path = path

    def within(self, segment: str) -> SchemaError:
        """Prefix the path with ``segment`` (a key, or ``[i]``) as the error propagates up."""
        if not self.path or self.path.startswith("["):
            self.path = segment + self.path
        else:
            self.path = f"{segment}.{self.path}"
        return self

    def __str__(self) -> str:
        return f"{self.path}: {self.problem}" if self.path else self.problem


_NOT_COMPILED = object()


def _type_name(value) -> str:
    return "nil" if value is None else type(value).__name__


SHOWN_CHARS = 64


def _shown(value) -> str:
    """A value a peer sent, for an error message (logged, and sent back): its repr cut to
    ``SHOWN_CHARS`` characters, so a megabyte of it never reaches a log line or the wire."""
    text = repr(value)
    return text if len(text) <= SHOWN_CHARS else f"{text[:SHOWN_CHARS]}... ({len(text)} chars)"


class Schema:
    """Base of all schema nodes; ``check`` raises SchemaError or returns None."""

    __slots__ = ()

    def check(self, value) -> None:  # pragma: no cover - abstract
        raise NotImplementedError


class Int(Schema):
    """An integer in [minimum, maximum] (int64 by default); bools are refused."""

    __slots__ = ("minimum", "maximum")

    def __init__(self, minimum: int = INT64_MIN, maximum: int = INT64_MAX) -> None:
        self.minimum = minimum
        self.maximum = maximum

    def check(self, value) -> None:
        if type(value) is not int and (not isinstance(value, int) or isinstance(value, bool)):
            raise SchemaError(f"expected int, got {_type_name(value)}")
        if not self.minimum <= value <= self.maximum:
            raise SchemaError(f"{value} is outside [{self.minimum}, {self.maximum}]")


class Choice(Schema):
    """One of a fixed set of ints or strs (``acks``, ``timestamp_type``)."""

    __slots__ = ("values", "kind")

    def __init__(self, *values) -> None:
        self.values = frozenset(values)
        self.kind = type(values[0])

    def check(self, value) -> None:
        if type(value) is not self.kind and not (
            self.kind is int and isinstance(value, int) and not isinstance(value, bool)
        ):
            raise SchemaError(f"expected {self.kind.__name__}, got {_type_name(value)}")
        if value not in self.values:
            raise SchemaError(f"{_shown(value)} is not one of {sorted(self.values)}")


class Str(Schema):
    __slots__ = ()

    def check(self, value) -> None:
        if type(value) is not str:
            raise SchemaError(f"expected str, got {_type_name(value)}")


class Bin(Schema):
    __slots__ = ()

    def check(self, value) -> None:
        if type(value) not in (bytes, bytearray, memoryview):
            raise SchemaError(f"expected bin, got {_type_name(value)}")


class Bool(Schema):
    __slots__ = ()

    def check(self, value) -> None:
        if type(value) is not bool:
            raise SchemaError(f"expected bool, got {_type_name(value)}")


class Nullable(Schema):
    """The inner schema, or nil."""

    __slots__ = ("inner",)

    def __init__(self, inner: Schema) -> None:
        self.inner = inner

    def check(self, value) -> None:
        if value is not None:
            self.inner.check(value)


class ListOf(Schema):
    __slots__ = ("item",)

    def __init__(self, item: Schema) -> None:
        self.item = item

    def check(self, value) -> None:
        if type(value) is not list and type(value) is not tuple:
            raise SchemaError(f"expected list, got {_type_name(value)}")
        check = self.item.check
        for index, item in enumerate(value):
            try:
                check(item)
            except SchemaError as exc:
                raise exc.within(f"[{index}]") from None


class MapOf(Schema):
    """A map with str keys (``configs``) and values of one schema."""

    __slots__ = ("value",)

    def __init__(self, value: Schema) -> None:
        self.value = value

    def check(self, value) -> None:
        if type(value) is not dict:
            raise SchemaError(f"expected map, got {_type_name(value)}")
        check = self.value.check
        for key, item in value.items():
            if type(key) is not str:
                raise SchemaError(f"map key {_shown(key)} is not a str")
            try:
                check(item)
            except SchemaError as exc:
                raise exc.within(key) from None


class Struct(Schema):
    """A map with fixed str keys: every required key present, no key unknown.

    Args:
        fields: key -> schema of its value.
        optional: keys that may be absent.
    """

    __slots__ = ("fields", "required", "optional", "_accepts")

    def __init__(self, fields: dict[str, Schema], optional: frozenset[str] = frozenset()) -> None:
        self.fields = fields
        self.optional = frozenset(optional)
        self.required = len(fields) - len(self.optional)
        self._accepts = _NOT_COMPILED

    def compile(self) -> None:
        """Build the fast path now rather than at the first ``check`` (a server does this
        before it listens: compiling takes a fraction of a millisecond per schema, which
        the first request of each API would otherwise wait for)."""
        if self._accepts is _NOT_COMPILED:
            self._accepts = compile_accepts(self)

    def check(self, value) -> None:
        accepts = self._accepts
        if accepts is _NOT_COMPILED:  # compiled on first use (see compile_accepts)
            accepts = self._accepts = compile_accepts(self)
        if accepts is not None and accepts(value):
            return
        self._check_slowly(value)

    def _check_slowly(self, value) -> None:
        """Node by node, raising a SchemaError that says where the value went wrong."""
        if type(value) is not dict:
            raise SchemaError(f"expected map, got {_type_name(value)}")
        fields = self.fields
        optional = self.optional
        for key, item in value.items():
            schema = fields.get(key) if type(key) is str else None
            if schema is None:
                raise SchemaError(f"unknown key {_shown(key)}")
            try:
                schema.check(item)
            except SchemaError as exc:
                raise exc.within(key) from None
        # Every key is known by now, so without optional fields the count says it all.
        present = len(value) if not optional else sum(key not in optional for key in value)
        if present != self.required:
            missing = [k for k in fields if k not in value and k not in self.optional]
            raise SchemaError(f"missing key(s) {', '.join(missing)}")


# Shared building blocks.
INT32 = Int(INT32_MIN, INT32_MAX)
INT64 = Int()
PARTITION = Int(0, INT32_MAX)  # partitions are never negative on the wire
NON_NEGATIVE_INT32 = Int(0, INT32_MAX)
ERROR_CODE = INT32  # ErrorCode numbers; unknown ones are read as UNKNOWN_SERVER_ERROR
STR = Str()
BIN = Bin()
BOOL = Bool()
NULLABLE_STR = Nullable(STR)

# ---------------------------------------------------------------------- fast accept path
#
# A schema compiled into one flat Python function that only says "valid" or "not sure".
#
# Why: every request the broker reads (and every response the client reads) is checked
# against its schema, and walking the schema node by node costs a method call, a dict lookup
# and a try block per value: a large share of a lookup's time on the broker. Compiled, the same walk is a handful of inline ``type(x) is``
# tests in one frame, several times cheaper.
#
# The compiled function is a fast *accept* path, never the judge: when it returns False the
# caller runs the node-by-node check, which raises the ``SchemaError`` with its path (or
# accepts what the fast path is stricter about, such as an ``IntEnum`` where an int belongs).
# So it must only be sound: whatever it accepts, ``check`` accepts too. Map keys are matched
# by value, so a ``str`` subclass key counts as its ``str`` (msgpack only ever decodes ``str``).

_MISSING = object()


def compile_accepts(schema):
    """Return ``accepts(value) -> bool`` for ``schema``, or None for an unknown node type."""
    lines: list[str] = []
    constants: dict[str, object] = {"MISSING": _MISSING}
    names = itertools.count()

    def emit(node, var: str, depth: int) -> bool:
        pad = "    " * depth
        if isinstance(node, Int):
            lines.append(f"{pad}if type({var}) is not int or not "
                         f"{node.minimum} <= {var} <= {node.maximum}: return False")
        elif isinstance(node, Choice):
            if node.kind not in (int, str):
                return False
            allowed = f"c{next(names)}"
            constants[allowed] = node.values
            lines.append(f"{pad}if type({var}) is not {node.kind.__name__} or "
                         f"{var} not in {allowed}: return False")
        elif isinstance(node, (Str, Bool)):
            kind = "str" if isinstance(node, Str) else "bool"
            lines.append(f"{pad}if type({var}) is not {kind}: return False")
        elif isinstance(node, Bin):
            lines.append(f"{pad}if type({var}) is not bytes and type({var}) is not bytearray "
                         f"and type({var}) is not memoryview: return False")
        elif isinstance(node, Nullable):
            lines.append(f"{pad}if {var} is not None:")
            return emit(node.inner, var, depth + 1)
        elif isinstance(node, ListOf):
            item = f"v{next(names)}"
            lines.append(f"{pad}if type({var}) is not list and type({var}) is not tuple: "
                         "return False")
            lines.append(f"{pad}for {item} in {var}:")
            return emit(node.item, item, depth + 1)
        elif isinstance(node, MapOf):
            key, item = f"k{next(names)}", f"v{next(names)}"
            lines.append(f"{pad}if type({var}) is not dict: return False")
            lines.append(f"{pad}for {key}, {item} in {var}.items():")
            lines.append(f"{pad}    if type({key}) is not str: return False")
            return emit(node.value, item, depth + 1)
        elif isinstance(node, Struct):
            return _emit_struct(node, var, depth, pad, emit, lines, names)
        else:
            return False
        return True

    if not emit(schema, "value", 2):
        return None
    # A required key is read by subscript, and a missing one ends the walk through the
    # except clause: a try costs nothing in 3.11 until it catches, where ``.get`` with a
    # sentinel and its test cost a method call and four more instructions per key.
    source = ("def accepts(value):\n    try:\n" + "\n".join(lines)
              + "\n    except KeyError:\n        return False\n    return True\n")
    exec(compile(source, f"<schema fast path {type(schema).__name__}>", "exec"), constants)
    return constants["accepts"]


def _emit_struct(node: Struct, var: str, depth: int, pad: str, emit, lines, names) -> bool:
    """Every required key present, every present key known (counted), each value valid."""
    required = len(node.fields) - len(node.optional)
    lines.append(f"{pad}if type({var}) is not dict: return False")
    if node.optional:
        present = f"n{next(names)}"
        lines.append(f"{pad}{present} = {required}")
    else:
        lines.append(f"{pad}if len({var}) != {required}: return False")
    for key, field in node.fields.items():
        item = f"v{next(names)}"
        if key in node.optional:
            lines.append(f"{pad}{item} = {var}.get({key!r}, MISSING)")
            lines.append(f"{pad}if {item} is not MISSING:")
            lines.append(f"{pad}    {present} += 1")
            if not emit(field, item, depth + 1):
                return False
        else:  # absent: KeyError, caught once for the whole function (compile_accepts)
            lines.append(f"{pad}{item} = {var}[{key!r}]")
            if not emit(field, item, depth):
                return False
    if node.optional:
        lines.append(f"{pad}if len({var}) != {present}: return False")
    return True
