"""Partition sizes in bytes, read from the brokers' metrics endpoints when the console knows
them (``--metrics NODE=URL``): the tslog protocol has no request for log sizes, and each
broker's ``/metrics`` already publishes ``tslog_log_size_bytes{topic, partition}``.

Best effort by design: an endpoint that is down, slow (``TIMEOUT_S``) or asks for a login the
console does not have leaves its partitions' sizes unknown ("-") instead of failing the
page. A partition's replicas hold the same records, so the largest size reported for it is
taken rather than a sum over brokers.
"""

from __future__ import annotations

import asyncio
import re
import urllib.request

TIMEOUT_S = 2.0
_SAMPLE = re.compile(r'^tslog_log_size_bytes\{([^}]*)\} ([0-9.e+]+)$')
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def parse_sizes(text: str, topic: str) -> dict[int, int]:
    """{partition: bytes} of ``topic`` from a Prometheus text exposition."""
    sizes: dict[int, int] = {}
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if not match:
            continue
        labels = dict(_LABEL.findall(match.group(1)))
        if labels.get("topic") == topic and labels.get("partition", "").isdigit():
            partition = int(labels["partition"])
            sizes[partition] = max(sizes.get(partition, 0), int(float(match.group(2))))
    return sizes


def _scrape(url: str) -> str:
    with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response:
        return response.read().decode("utf-8", "replace")


async def topic_sizes(metrics_urls: dict, topic: str) -> dict[int, int]:
    """{partition: bytes} from every endpoint that answered; {} without endpoints."""
    texts = await asyncio.gather(*(asyncio.to_thread(_scrape, url)
                                   for url in metrics_urls.values()), return_exceptions=True)
    sizes: dict[int, int] = {}
    for text in texts:
        if isinstance(text, str):
            for partition, size in parse_sizes(text, topic).items():
                sizes[partition] = max(sizes.get(partition, 0), size)
    return sizes
