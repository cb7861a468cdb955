"""Find by time (and by offset): the records at a moment in every partition of a topic.

``/find?topic=T&time=-15m`` (any form ``tslog consume --from-time`` takes, or epoch ms as the
chart's bars send) resolves the moment per partition through the time index and shows up to
``limit`` records of each from there (default 10, fewer when the topic has more than 20
partitions: ROWS_DEFAULT rows a page). ``partition=P`` narrows it to one partition, and with
``offset=N`` it starts at that offset instead of a moment. "Earlier" and "later" carry the
exact positions (``at=P:OFFSET,...``), so paging never skips or repeats a record.
"""

from __future__ import annotations

from starlette.responses import HTMLResponse

from tslog.client.times import parse_time_ms

from .html import Markup, link, page, table, text, when
from .records import (
    FORMATS,
    format_positions,
    parse_positions,
    page_at,
    preview,
    read_page,
)

LIMIT_DEFAULT, LIMIT_MAX = 10, 500
ROWS_DEFAULT = 200  # a page of a 1,000-partition topic shows 1 record each unless asked


def _form(query) -> Markup:
    def value(name):
        return text(query.get(name) or "")
    formats = "".join(f'<option{" selected" if f == query.get("format") else ""}>{f}</option>'
                      for f in FORMATS)
    return Markup(
        f'<form method=get action="/find">topic <input name=topic value="{value("topic")}"> '
        f'time <input name=time value="{value("time")}" placeholder="-15m or ISO-8601"> '
        f'partition <input name=partition size=4 value="{value("partition")}"> '
        f'offset <input name=offset size=8 value="{value("offset")}"> '
        f'per partition <input name=limit size=4 value="{value("limit")}"> '
        f'show as <select name=format>{formats}</select> <button>Find</button></form>')


async def _read(console, query, topic: str):
    """The page the query asks for: at exact positions (paging), at an offset of one
    partition, or at a moment in every partition (or one)."""
    if query.get("at"):
        positions = parse_positions(query["at"])
        return await read_page(console.admin, topic, positions, _limit(query, len(positions)))
    description = await console.admin.describe_topic(topic)
    partitions = [info.partition for info in description.partitions]
    if query.get("partition"):
        chosen = int(query["partition"])
        if chosen not in partitions:
            raise ValueError(f"topic {topic} has no partition {chosen}")
        partitions = [chosen]
        if query.get("offset"):
            return await read_page(console.admin, topic, {chosen: int(query["offset"])},
                                   _limit(query, 1))
    moment = parse_time_ms(query.get("time") or "now")
    return await page_at(console.admin, topic, partitions, moment,
                         _limit(query, len(partitions)), query.get("time_type") or "append")


def _limit(query, partitions: int) -> int:
    asked = query.get("limit") or min(LIMIT_DEFAULT, ROWS_DEFAULT // max(partitions, 1) or 1)
    return min(max(int(asked), 1), LIMIT_MAX)


def _headers(headers, how: str) -> str:
    return "; ".join(f"{name}={preview(value, how, mark=False)}"
                     for name, value in headers) or "-"


async def find_page(request, console) -> HTMLResponse:
    query = request.query_params
    topic = query.get("topic")
    read_only = not console.options.allow_writes
    if not topic:
        return HTMLResponse(page("Find by time", _form(query), read_only=read_only))
    how = query.get("format") or "text"
    if how not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}")
    found = await _read(console, query, topic)
    limit = _limit(query, len(found.positions))
    rows = [(p, r.offset, when(r.log_append_time), when(r.create_time),
             Markup(f"<pre>{text(preview(r.key, how, mark=False))}</pre>"),
             Markup(f"<pre>{text(preview(r.value, how))}</pre>"), _headers(r.headers, how))
            for p in sorted(found.records) for r in found.records[p]]
    starts = ", ".join(f"{p}@{o}" for p, o in sorted(found.positions.items()))

    def paging(positions, label):
        return link("/find", label, topic=topic, at=format_positions(positions),
                    limit=limit, format=how)

    nav = Markup(f'<p id="paging">{paging(found.earlier(limit), "← earlier")} · '
                 f'{paging(found.later(), "later →")}</p>')
    return HTMLResponse(page(
        f"Records of {topic}", _form(query),
        f"{len(rows)} records from partition@offset {starts}", nav,
        table(["partition", "offset", "LogAppendTime", "CreateTime", "key", "value",
               "headers"], rows, "records"), nav, read_only=read_only))

