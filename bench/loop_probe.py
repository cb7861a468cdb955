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
when the broker exits (SIGTERM), with the stacks a watchdog thread saw whenever a probe was
``STALL_S`` late: the loop thread's (what it was running) and every other thread's (which one
held the GIL, e.g. C code in an I/O thread that does not release it).
"""

from __future__ import annotations

import asyncio
import atexit
import json
import collections
import sys
import threading
import time
import traceback
from pathlib import Path

PROBE_INTERVAL_S = 0.001
STALL_S = 0.003  # a probe unanswered this long makes the watchdog note every thread's stack
STACK_DEPTH = 5


def _idle(frame: traceback.FrameSummary) -> bool:
    """A thread parked on a queue, event or lock (it holds no GIL; not worth printing)."""
    return (Path(frame.filename).name in ("threading.py", "queue.py", "thread.py")
            or any(call in (frame.line or "") for call in (".get(", ".wait(", ".acquire(")))


def install(path: str) -> None:
    import tslog.broker.__main__ as broker_main

    samples: list[tuple[float, float]] = []
    stalls: collections.Counter = collections.Counter()  # thread stack -> stalls it was in
    serve = broker_main.serve

    async def probed_serve(config, **kwargs):
        loop = asyncio.get_running_loop()
        stop = threading.Event()

        loop_thread = threading.get_ident()
        waiting = {}  # the oldest unanswered probe: {"sent": perf_counter time}

        def answered(sent: float, wall: float) -> None:
            samples.append((wall, time.perf_counter() - sent))
            if waiting.get("sent") == sent:
                waiting.clear()

        def ping() -> None:
            while not stop.wait(PROBE_INTERVAL_S):
                sent = time.perf_counter()
                waiting.setdefault("sent", sent)
                try:
                    loop.call_soon_threadsafe(answered, sent, time.time())
                except RuntimeError:  # the loop closed
                    return

        def watch() -> None:
            """Where every thread is while the loop is late: the loop's own frame says what
            it runs; when it shows only the loop's C code, another thread's frame may show
            who holds the GIL."""
            noted = None
            while not stop.wait(PROBE_INTERVAL_S):
                sent = waiting.get("sent")
                if sent is None or sent == noted or time.perf_counter() - sent < STALL_S:
                    continue
                noted = sent
                names = {t.ident: t.name for t in threading.enumerate()}
                for ident, frame in sys._current_frames().items():
                    stack = traceback.extract_stack(frame)[-STACK_DEPTH:]
                    if ident != loop_thread and (names.get(ident, "").startswith("loop-")
                                                 or _idle(stack[-1])):
                        continue
                    where = " < ".join(f"{Path(f.filename).name}:{f.lineno} {f.name}"
                                       for f in reversed(stack))
                    label = "loop" if ident == loop_thread else names.get(ident, "?")
                    stalls[f"[{label}] {where}"] += 1

        for target, name in ((ping, "loop-probe"), (watch, "loop-watchdog")):
            threading.Thread(target=target, name=name, daemon=True).start()
        try:
            return await serve(config, **kwargs)
        finally:
            stop.set()

    def dump() -> None:
        with open(path, "w") as handle:
            json.dump({"samples": samples, "stalls": stalls.most_common(40)}, handle)

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
