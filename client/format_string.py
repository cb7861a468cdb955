"""``--format-string``: kcat's output fields, compiled once into a function of a record.

Why compiled: a replay prints millions of lines, and parsing the format for each would be
most of the work. The format is split once into literal text and field getters; a record
costs one join.

Fields (kcat's, plus ``%I``): ``%t`` topic, ``%p`` partition, ``%o`` offset, ``%T`` the
timestamp in epoch ms (LogAppendTime, or CreateTime with ``--timestamp-type create``), ``%I``
the same as ISO-8601, ``%k`` key, ``%K`` key length (-1 when there is none), ``%s`` value,
``%S`` value length, ``%h`` headers as ``name=value`` joined by commas, ``%%`` a percent
sign; ``\\n``, ``\\t``, ``\\r`` and ``\\\\`` are escapes. Anything else after ``%`` is an error
naming it, so a typo does not print a literal the user did not mean.
"""

from __future__ import annotations

from .cli_common import UsageError
from .times import format_time_ms

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\"}


def _text(data: bytes | None) -> str:
    return "" if data is None else data.decode("utf-8", errors="backslashreplace")


def _fields(timestamp_type: str) -> dict:
    stamp = ((lambda r: r.create_time) if timestamp_type == "create"
             else (lambda r: r.log_append_time))
    return {
        "t": lambda r: r.topic,
        "p": lambda r: str(r.partition),
        "o": lambda r: str(r.offset),
        "T": lambda r: str(stamp(r)),
        "I": lambda r: format_time_ms(stamp(r)),
        "k": lambda r: _text(r.key),
        "K": lambda r: str(-1 if r.key is None else len(r.key)),
        "s": lambda r: _text(r.value),
        "S": lambda r: str(-1 if r.value is None else len(r.value)),
        "h": lambda r: ",".join(f"{name}={_text(value)}" for name, value in r.headers),
    }


def compile_format(fmt: str, timestamp_type: str = "append"):
    """``fmt`` -> a function record -> str (see the module docstring for the fields)."""
    fields = _fields(timestamp_type)
    parts: list = []  # str literals and field getters, in order
    literal: list[str] = []
    i = 0
    while i < len(fmt):
        char = fmt[i]
        following = fmt[i + 1] if i + 1 < len(fmt) else ""
        if char == "%":
            if following == "%":
                literal.append("%")
            elif following in fields:
                if literal:
                    parts.append("".join(literal))
                    literal = []
                parts.append(fields[following])
            else:
                raise UsageError(f"--format-string: unknown field %{following} (known: "
                                 f"{' '.join('%' + name for name in fields)} %%)")
            i += 2
        elif char == "\\" and following in _ESCAPES:
            literal.append(_ESCAPES[following])
            i += 2
        else:
            literal.append(char)
            i += 1
    if literal:
        parts.append("".join(literal))
    getters = [part if callable(part) else (lambda r, text=part: text) for part in parts]
    return lambda record: "".join([getter(record) for getter in getters])
