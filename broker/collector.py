"""Python's cycle collector in a running broker: what exists at start is frozen out of it.

Why: a full (generation 2) collection walks every object the collector tracks, and a broker
that has just started holds some 45,000 of them (its modules, the compiled request schemas,
the recovered logs' structures). Each full collection ran for tens of milliseconds on the
event loop, so every connection waited that long: it was the longest stall in every run of
``bench/loop_stall.py``. ``gc.freeze`` moves them to a permanent generation that collections
skip; they live as long as the process anyway. Objects made later (connections, requests,
segments) are collected as before.

Only the daemon's entry point calls this: a test or an embedding application that runs
``serve`` in its own process keeps its own collector settings.
"""

from __future__ import annotations

import gc


def freeze_startup_objects() -> int:
    """Collect what start-up left as garbage, then freeze the rest; how many were frozen."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
