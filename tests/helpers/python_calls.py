"""Python function calls made while some code runs: the count hot-path tests and benches
assert or print instead of a time (a count does not move with the machine's load)."""

from __future__ import annotations

import sys


def count_calls(run) -> tuple[int, object]:
    """(the Python-level calls ``run()`` made, its result)."""
    calls = 0

    def profile(frame, event, arg):
        nonlocal calls
        if event == "call":
            calls += 1

    sys.setprofile(profile)
    try:
        result = run()
    finally:
        sys.setprofile(None)
    return calls, result
