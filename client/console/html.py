"""The console's page frame and small HTML helpers: every value is escaped here, once.

Why plain functions and not a template engine: the pages are tables and forms, a template
language would be one more dependency and one more escaping rule to get right; ``table`` and
``page`` escape everything they are given unless it is wrapped in ``Markup`` (HTML this
package built itself).
"""

from __future__ import annotations

from functools import lru_cache
from html import escape
from urllib.parse import urlencode

from tslog.client.times import format_time_ms

_STYLE = """
body{font-family:system-ui,sans-serif;margin:0;color:#222}
nav{background:#23395d;padding:.5em 1em}nav a{color:#fff;margin-right:1.5em;text-decoration:none}
main{padding:1em}table{border-collapse:collapse;margin:.5em 0}
td,th{border:1px solid #ccc;padding:2px 6px;font-size:13px;text-align:left;vertical-align:top}
th{background:#eef}.bad{color:#b00;font-weight:bold}.chart .bar{fill:#4a7bd0}
.chart a:hover .bar{fill:#e07b00}.axis{font-size:11px;fill:#555}
pre{margin:0;white-space:pre-wrap;max-width:40em}form{margin:.5em 0}
.note{color:#555;font-size:13px}.error{background:#fee;border:1px solid #b00;padding:.5em}
"""


class Markup(str):
    """HTML built by this package: ``table`` and ``page`` insert it unescaped."""


def text(value) -> str:
    """``value`` escaped for HTML; None as "-". An int has nothing to escape, and a table of
    1,000 partitions has thousands of them: they skip ``escape``'s five replacements."""
    if type(value) is int:
        return str(value)
    if isinstance(value, Markup):
        return value
    return escape("-" if value is None else str(value))


def link(path: str, label, **query) -> Markup:
    href = path + ("?" + urlencode({k: v for k, v in query.items() if v is not None})
                   if query else "")
    return Markup(f'<a href="{escape(href)}">{text(label)}</a>')


def when(ms: int | None) -> str:
    """``format_time_ms``, with the part up to the second formatted once per second: a page
    of a 1,000-partition topic prints two times per row, and records close in time share
    their second (formatting a datetime costs more than the rest of a table cell). Markup:
    nothing in it needs escaping."""
    if ms is None or ms < 0:
        return "-"
    return Markup(f"{_second(ms // 1000)}.{ms % 1000:03d}Z")  # digits, "-", ":", "T", "Z"


@lru_cache(maxsize=4096)
def _second(seconds: int) -> str:
    return format_time_ms(seconds * 1000)[:-5]  # without ".000Z"


def table(headers: list, rows: list, css_id: str | None = None) -> Markup:
    head = "".join(f"<th>{text(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{text(cell)}</td>" for cell in row) + "</tr>"
                   for row in rows)
    ident = f' id="{escape(css_id)}"' if css_id else ""
    return Markup(f"<table{ident}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")


def page(title: str, *parts, read_only: bool = True) -> str:
    """A whole HTML document: navigation, the title, then ``parts`` (Markup or text)."""
    mode = "read-only" if read_only else "write actions enabled"
    body = "".join(part if isinstance(part, Markup) else f"<p>{text(part)}</p>"
                   for part in parts)
    return (f"<!doctype html><html lang=en><head><meta charset=utf-8>"
            f"<title>{text(title)} · tslog console</title>"
            f"<link rel=icon href=\"data:,\"><style>{_STYLE}</style></head>"
            f"<body><nav><a href=\"/\">Cluster</a><a href=\"/topics\">Topics</a>"
            f"<a href=\"/find\">Find by time</a><a href=\"/groups\">Consumer groups</a>"
            f"<span style=\"color:#9bd;float:right\">{mode}</span></nav>"
            f"<main><h1>{text(title)}</h1>{body}</main></body></html>")


def error_box(message: str) -> Markup:
    return Markup(f'<p class="error">{text(message)}</p>')
