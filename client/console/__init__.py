"""The web console, ``tslog console``: a client of the cluster that shows its log by time.

Pages: the cluster (brokers, controller, partition health), topics (partitions, offsets,
times, configs, a chart of records per bucket from the time index), find by time or offset,
and consumer groups (members, lag in records and seconds, reset to a moment with
``--allow-writes``). It uses the public async client only (``tslog.client.aio``), never broker
internals. docs/console.md describes it; ``command.py`` is the entry point.
"""
