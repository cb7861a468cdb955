"""Prometheus text format (version 0.0.4), written directly for the broker's own series.

Why not prometheus_client's ``generate_latest`` for everything: it validates and escapes
every label of every sample on every scrape, so a broker with a few hundred series spent
milliseconds of CPU (holding the GIL the event loop needs) per scrape. Here
label sets are escaped once, when a child or a row is made, and a scrape joins prepared
strings with numbers. prometheus_client still renders the
few metrics it owns (process, GC, recovery, connections, replication).
"""

from __future__ import annotations

import math


def escape_label_value(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def label_text(names: tuple[str, ...], values: tuple[str, ...]) -> str:
    """``{a="x",b="y"}``, or "" without labels."""
    if not names:
        return ""
    return "{" + ",".join(f'{name}="{escape_label_value(value)}"'
                          for name, value in zip(names, values)) + "}"


def with_label(labels: str, name: str, value: str) -> str:
    """``labels`` (as made by ``label_text``) plus one more label."""
    extra = f'{name}="{value}"'
    return "{" + extra + "}" if not labels else labels[:-1] + "," + extra + "}"


def number(value: float) -> str:
    """A sample value as Prometheus prints it (Go's float formatting)."""
    if value == math.inf:
        return "+Inf"
    if value == -math.inf:
        return "-Inf"
    if value != value:
        return "NaN"
    if float(value).is_integer() and abs(value) < 1e15:
        return f"{int(value)}.0"
    return repr(float(value))


def header(lines: list[str], name: str, documentation: str, kind: str) -> None:
    text = documentation.replace("\\", "\\\\").replace("\n", "\\n")
    lines.append(f"# HELP {name} {text}\n# TYPE {name} {kind}\n")
