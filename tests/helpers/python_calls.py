"""Python function calls made while some code runs: the count hot-path tests and benches
assert or print instead of a time (a count does not move with the machine's load).

The collector is off while counting: a collection that happens to fall inside the count runs
finalizers and ``gc.callbacks`` (hypothesis registers one) that are no part of the code
measured, and once pushed a one-record append from 22 calls to 24 in CI."""

from __future__ import annotations

import gc
import sys
from collections import Counter


def calls_by_name(run) -> tuple[Counter, object]:
    """(the calls ``run()`` made, its result). The counter holds ``python`` (Python-level
    calls), ``c`` (C-level calls), and each called function's name."""
    calls = Counter()
    own_frame = []  # ``run``'s own call is not one it made

    def profile(frame, event, arg):
        if event == "call":
            if not own_frame:
                own_frame.append(frame)
                return
            calls["python"] += 1
            calls[frame.f_code.co_name] += 1
        elif event == "c_call":
            calls["c"] += 1
            calls[arg.__name__] += 1

    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    sys.setprofile(profile)
    try:
        result = run()
    finally:
        sys.setprofile(None)
        if was_enabled:
            gc.enable()
    return calls, result


def count_calls(run) -> tuple[int, object]:
    """(the Python-level calls ``run()`` made, its result)."""
    calls, result = calls_by_name(run)
    return calls["python"], result
