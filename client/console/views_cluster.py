"""The cluster page, the topics list, and a topic's page with its traffic chart.

A topic's chart counts records per bucket from the time index (``traffic.py``): the window is
``from``..``to`` (any form ``tslog consume --from-time`` takes; default the last hour), the
bucket ``second``, ``minute`` or ``hour`` (default: the smallest that fits the window in
``BUCKETS_MAX``), for the whole topic and, below it, per partition.
"""

from __future__ import annotations

import asyncio
from urllib.parse import urlencode

from starlette.responses import HTMLResponse

from tslog.client.times import parse_time_ms

from .html import Markup, link, page, table, text, when
from .reads import cluster_view, partition_rows, topic_configs
from .traffic import BUCKET_MS, boundaries, edge_offsets, traffic
from .charts import bar_chart
from .sizes import topic_sizes

DEFAULT_WINDOW = "-1h"


def _html(console, title: str, *parts) -> HTMLResponse:
    return HTMLResponse(page(title, *parts, read_only=not console.options.allow_writes))


async def cluster_page(request, console) -> HTMLResponse:
    view = await cluster_view(console.admin, console.options.metrics_urls)
    brokers = table(["node", "address", "controller", "leaders", "replicas", "metrics"], [
        (b.node_id, f"{b.host}:{b.port}", "yes" if b.is_controller else "", b.leaders,
         b.replicas, link(b.metrics_url, b.metrics_url) if b.metrics_url
         else "not announced (--metrics NODE=URL)") for b in view.brokers], "brokers")
    unhealthy = table(["kind", "topic", "partition"],
                      [("under-replicated", t, p) for t, p in view.under_replicated]
                      + [("offline", t, p) for t, p in view.offline], "unhealthy")
    summary = (f"{len(view.brokers)} brokers, controller {view.controller_id}, "
               f"{len(view.topics)} topics, {sum(view.topics.values())} partitions, "
               f"{len(view.under_replicated)} under-replicated, {len(view.offline)} offline")
    return _html(console, "Cluster", summary, Markup("<h2>Brokers</h2>"), brokers,
                 Markup("<h2>Under-replicated and offline partitions</h2>"), unhealthy)


async def topics_page(request, console) -> HTMLResponse:
    view = await cluster_view(console.admin, console.options.metrics_urls)
    rows = [(link(f"/topics/{name}", name), count) for name, count in sorted(view.topics.items())]
    return _html(console, "Topics", table(["topic", "partitions"], rows, "topics"))


AUTO_BUCKETS_MAX = 120  # a chart whose bucket was not asked for: an hour by minute, a day by hour


def pick_bucket(from_ms: int, to_ms: int, asked: str | None) -> int:
    """The bucket asked for, or the smallest that keeps the chart within AUTO_BUCKETS_MAX
    bars (each bar edge is one more lookup in every partition)."""
    if asked:
        if asked not in BUCKET_MS:
            raise ValueError(f"bucket must be one of {', '.join(BUCKET_MS)}, not {asked!r}")
        return BUCKET_MS[asked]
    for size in BUCKET_MS.values():
        if (to_ms - from_ms) // size < AUTO_BUCKETS_MAX:
            return size
    return BUCKET_MS["hour"]


def _window_form(topic: str, start: str, end: str, bucket: str, time_type: str) -> Markup:
    options = "".join(f'<option{" selected" if b == bucket else ""}>{b}</option>'
                      for b in ("", *BUCKET_MS))
    types = "".join(f'<option{" selected" if t == time_type else ""}>{t}</option>'
                    for t in ("append", "create"))
    return Markup(
        f'<form method=get action="/topics/{text(topic)}">from <input name=from '
        f'value="{text(start)}"> to <input name=to value="{text(end)}"> bucket '
        f'<select name=bucket>{options}</select> time <select name=time_type>{types}</select>'
        f' <button>Draw</button></form>')


async def topic_page(request, console) -> HTMLResponse:
    topic = request.path_params["topic"]
    query = request.query_params
    start, end = query.get("from") or DEFAULT_WINDOW, query.get("to") or "now"
    time_type = query.get("time_type") or "append"
    from_ms, to_ms = parse_time_ms(start), parse_time_ms(end)
    bucket_ms = pick_bucket(from_ms, to_ms, query.get("bucket"))
    edges = boundaries(from_ms, to_ms, bucket_ms)  # a bad window asks the cluster nothing
    description = await console.admin.describe_topic(topic)
    # the chart's edges go out with the table's requests: the broker answers one while the
    # console reads another, and the chart needs the table's log ends only to count
    rows, offsets, configs, sizes = await asyncio.gather(
        partition_rows(console.admin, description),
        edge_offsets(console.admin, topic, [info.partition for info in description.partitions],
                     edges, time_type),
        topic_configs(console.admin, topic), topic_sizes(console.options.metrics_urls, topic))
    chart = traffic(edges, offsets, {r.partition: r.end_offset for r in rows})

    def find_at(partition=None):
        # one urlencode per chart, not per bar: only the time differs between bars
        extra = {} if partition is None else {"partition": partition}
        return "/find?" + urlencode({"topic": topic, "time_type": time_type, **extra})

    partitions = table(
        ["partition", "leader", "replicas", "ISR", "start offset", "end offset", "records",
         "bytes", "earliest", "latest"],
        [(r.partition, r.leader, _ids(r.replicas), _ids(r.isr),
          r.start_offset, r.end_offset, r.records, sizes.get(r.partition),
          when(r.earliest_ms), when(r.latest_ms)) for r in rows], "partitions")
    per_partition = "".join(
        f"<h3>partition {p}</h3>" + bar_chart(chart.starts_ms, counts, find_at(p),
                                              f"records per bucket, partition {p}")
        for p, counts in chart.first(_PARTITION_CHARTS_MAX))
    total = sum(r.records for r in rows)
    size = (f"{sum(sizes.values())} bytes" if len(sizes) == len(rows)
            else "bytes: give --metrics NODE=URL per broker")
    return _html(
        console, f"Topic {topic}",
        f"{len(rows)} partitions, {total} records (log end minus log start), {size}",
        Markup("<h2>Partitions</h2>"), partitions,
        Markup(f"<h2>Records per {_bucket_name(bucket_ms)} ({time_type} time)</h2>"),
        _window_form(topic, start, end, query.get("bucket") or "", time_type),
        Markup('<div id="traffic">' + bar_chart(chart.starts_ms, chart.totals, find_at(),
                                                "records per bucket") + "</div>"),
        Markup(f"<details><summary>per partition</summary>{per_partition}</details>"),
        Markup("<h2>Configs</h2>"), table(["name", "value", "source"], configs, "configs"))


def _ids(nodes: list) -> Markup:
    """Node ids as "0,1,2": ints and commas, nothing to escape (two cells of every row)."""
    return Markup(",".join(map(str, nodes)))


_PARTITION_CHARTS_MAX = 64  # more charts than this make a page nobody scrolls through


def _bucket_name(bucket_ms: int) -> str:
    return next(name for name, size in BUCKET_MS.items() if size == bucket_ms)
