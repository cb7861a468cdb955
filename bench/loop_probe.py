"""Run ``tslog-broker`` with a probe of its event loop's lag; ``bench/loop_stall.py`` uses it.

    python bench/loop_probe.py SAMPLES.json -- --data-dir D --listen 127.0.0.1:PORT

Why a launcher and not a metric: the same probe must measure the broker of any commit (the
one before issue 21 has none), and measuring from another process cannot see the loop. So it
wraps ``tslog.broker.__main__.serve`` of whichever tslog the interpreter imports and changes
nothing else.

What it measures: a thread asks the loop, every ``PROBE_INTERVAL_S``, to run a callback
(``call_soon_threadsafe``) and the callback notes how long that took. That is the wait an
event arriving at that moment (a request, a follower's fetch) sees before the loop runs
anything for it: an idle loop answers in tens of microseconds, a loop stuck in a syscall
for 10 ms makes every probe sent meanwhile wait the rest of it. Sampling at a fixed rate
weights a stall by its length, as arriving requests do. The probe's own cost: 1,000 wake-ups
a second. The samples (wall-clock send time, lag in seconds) are written to SAMPLES.json
when the broker exits (SIGTERM).
"""

from __future__ import annotations

import asyncio
import atexit
import json
import sys
import threading
import time

PROBE_INTERVAL_S = 0.001


def install(path: str) -> None:
    import tslog.broker.__main__ as broker_main

    samples: list[tuple[float, float]] = []
    serve = broker_main.serve

    async def probed_serve(config, **kwargs):
        loop = asyncio.get_running_loop()
        stop = threading.Event()

        def answered(sent: float, wall: float) -> None:
            samples.append((wall, time.perf_counter() - sent))

        def ping() -> None:
            while not stop.wait(PROBE_INTERVAL_S):
                try:
                    loop.call_soon_threadsafe(answered, time.perf_counter(), time.time())
                except RuntimeError:  # the loop closed
                    return

        thread = threading.Thread(target=ping, name="loop-probe", daemon=True)
        thread.start()
        try:
            return await serve(config, **kwargs)
        finally:
            stop.set()

    def dump() -> None:
        with open(path, "w") as handle:
            json.dump(samples, handle)

    broker_main.serve = probed_serve
    atexit.register(dump)


def main() -> int:
    path, separator, *args = sys.argv[1:]
    assert separator == "--", "usage: loop_probe.py SAMPLES.json -- BROKER ARGS"
    install(path)
    import tslog.broker.__main__ as broker_main
    return broker_main.main(args)


if __name__ == "__main__":
    sys.exit(main())
