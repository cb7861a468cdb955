"""A schema compiled into one flat Python function that only says "valid" or "not sure".

Why: every request the broker reads (and every response the client reads) is checked
against its schema, and walking the schema node by node costs a method call, a dict lookup
and a try block per value: about 3 us for a one-partition ListOffsets, a large share of a
lookup's time on the broker. Compiled, the same walk is a handful of inline ``type(x) is``
tests in one frame, several times cheaper.

The compiled function is a fast *accept* path, never the judge: when it returns False the
caller runs the node-by-node check, which raises the ``SchemaError`` with its path (or
accepts what the fast path is stricter about, such as an ``IntEnum`` where an int belongs).
So it must only be sound: whatever it accepts, ``check`` accepts too. Map keys are matched
by value, so a ``str`` subclass key counts as its ``str`` (msgpack only ever decodes ``str``).
"""

from __future__ import annotations

import itertools

from .schema import Bin, Bool, Choice, Int, ListOf, MapOf, Nullable, Str, Struct

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

    if not emit(schema, "value", 1):
        return None
    source = "def accepts(value):\n" + "\n".join(lines) + "\n    return True\n"
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
        lines.append(f"{pad}{item} = {var}.get({key!r}, MISSING)")
        if key in node.optional:
            lines.append(f"{pad}if {item} is not MISSING:")
            lines.append(f"{pad}    {present} += 1")
            if not emit(field, item, depth + 1):
                return False
        else:
            lines.append(f"{pad}if {item} is MISSING: return False")
            if not emit(field, item, depth):
                return False
    if node.optional:
        lines.append(f"{pad}if len({var}) != {present}: return False")
    return True
