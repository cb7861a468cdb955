"""Run ``tslog-broker`` with a probe of its event loop's lag; ``bench/loop_stall.py`` uses it.

    python bench/loop_probe.py SAMPLES.json [--thread-probe] [--stacks] -- --data-dir D ...

Why a launcher and not a metric: the same probe must measure the broker of any commit (the
one before issue 21 has none), and measuring from another process cannot see the loop. So it
wraps ``tslog.broker.__main__.serve`` of whichever tslog the interpreter imports and changes
nothing else.

What it measures: a timer on the loop itself, due every ``PROBE_INTERVAL_S``, notes how late
it ran. That is the wait an event arriving at that moment (a request, a follower's fetch)
sees before the loop runs anything for it: an idle loop runs it within tens of microseconds,
a loop busy with a request for 1 ms or stuck in a syscall for 10 ms runs it that much later,
and a loop waiting for the GIL (held by an I/O thread) just as late. Sampling at a fixed rate
weights a stall by its length, as arriving requests do (Node's ``monitorEventLoopDelay``
works the same way). The probe's own cost: 1,000 callbacks a second on the loop, no thread.

``--thread-probe`` measures as earlier versions did: a thread sends the loop a callback
(``call_soon_threadsafe``) every ``PROBE_INTERVAL_S``. That adds a Python thread to the
process it measures, one that needs the GIL 1,000 times a second, and with the watchdog two:
on a 2-core VM the loop then waits for the GIL behind the probe itself, and the same broker
shows a p99 about twice the timer's (1.7 against 3.2 ms in one run). Kept to compare with
figures taken that way.

``--stacks``: a watchdog thread notes every thread's stack whenever the loop has not run a
probe for ``STALL_S``: the loop thread's (what it was running) and every other busy
thread's (which one held the GIL, e.g. C code in an I/O thread that does not release it).
It costs GIL wake-ups of its own, so the lags of a run with stacks read a little high.

Waiting for a CPU: on Linux each timer sample also notes how long the loop thread sat on the
run queue (runnable, but another thread or process had the CPU) since the sample before, from
``/proc/thread-self/schedstat``. On a 2-core machine shared with the load generator that wait
is a large part of the tail (measured: 0.2-0.6 s of a 6 s run, against about 1 s running); a
lag minus that wait is what the broker's own work (its callbacks, its other threads holding
the GIL) cost the loop. The thread probe has no such figure (its callback runs on the loop,
the wait it measures starts on another thread).

The samples (wall-clock due time, lag in seconds, run-queue wait in seconds or None) and the
stacks are written to SAMPLES.json when the broker exits (SIGTERM).
"""

from __future__ import annotations

import asyncio
import atexit
import collections
import json
import os
import sys
import threading
import time
import traceback
from pathlib import Path

PROBE_INTERVAL_S = 0.001
STALL_S = 0.003  # the loop this long without a probe run makes the watchdog note stacks
STACK_DEPTH = 5


def _idle(frame: traceback.FrameSummary) -> bool:
    """A thread parked on a queue, event or lock (it holds no GIL; not worth printing)."""
    return (Path(frame.filename).name in ("threading.py", "queue.py", "thread.py")
            or any(call in (frame.line or "") for call in (".get(", ".wait(", ".acquire(")))


def _run_queue_clock():
    """A function giving the seconds the calling thread has spent runnable but not running
    (the second field of its schedstat), or None where the kernel does not say. The file is
    opened once and re-read with ``pread``: a few microseconds a sample."""
    try:
        fd = os.open("/proc/thread-self/schedstat", os.O_RDONLY)
    except OSError:
        return lambda: None

    def waited() -> float:
        return int(os.pread(fd, 128, 0).split()[1]) / 1e9

    return waited


class _Probe:
    """The samples, the watchdog's stack counts, and the loop's last sign of life."""

    def __init__(self) -> None:
        self.samples: list[tuple[float, float, float | None]] = []
        self.stalls: collections.Counter = collections.Counter()  # thread stack -> stalls
        self.alive = time.perf_counter()  # when the loop last ran a probe
        self.stop = threading.Event()

    def start_timer(self, loop: asyncio.AbstractEventLoop) -> None:
        run_queue_wait = _run_queue_clock()
        waited = [run_queue_wait()]

        def tick(due: float) -> None:
            now = self.alive = time.perf_counter()
            total = run_queue_wait()
            wait = None if total is None else total - waited[0]
            waited[0] = total
            self.samples.append((time.time(), now - due, wait))
            if not self.stop.is_set():
                loop.call_at(loop.time() + PROBE_INTERVAL_S, tick, now + PROBE_INTERVAL_S)

        loop.call_soon(tick, time.perf_counter())

    def start_thread_probe(self, loop: asyncio.AbstractEventLoop) -> None:
        def answered(sent: float, wall: float) -> None:
            self.alive = time.perf_counter()
            self.samples.append((wall, self.alive - sent, None))

        def ping() -> None:
            while not self.stop.wait(PROBE_INTERVAL_S):
                try:
                    loop.call_soon_threadsafe(answered, time.perf_counter(), time.time())
                except RuntimeError:  # the loop closed
                    return

        threading.Thread(target=ping, name="loop-probe", daemon=True).start()

    def start_watchdog(self, loop_thread: int) -> None:
        def watch() -> None:
            noted = None
            while not self.stop.wait(PROBE_INTERVAL_S / 2):
                alive = self.alive
                if alive == noted or time.perf_counter() - alive < STALL_S:
                    continue
                noted = alive
                names = {t.ident: t.name for t in threading.enumerate()}
                for ident, frame in sys._current_frames().items():
                    stack = traceback.extract_stack(frame)[-STACK_DEPTH:]
                    if ident != loop_thread and (names.get(ident, "").startswith("loop-")
                                                 or _idle(stack[-1])):
                        continue
                    where = " < ".join(f"{Path(f.filename).name}:{f.lineno} {f.name}"
                                       for f in reversed(stack))
                    label = "loop" if ident == loop_thread else names.get(ident, "?")
                    self.stalls[f"[{label}] {where}"] += 1

        threading.Thread(target=watch, name="loop-watchdog", daemon=True).start()


def install(path: str, thread_probe: bool = False, stacks: bool = False) -> None:
    import tslog.broker.__main__ as broker_main

    probe = _Probe()
    serve = broker_main.serve

    async def probed_serve(config, **kwargs):
        loop = asyncio.get_running_loop()
        if thread_probe:
            probe.start_thread_probe(loop)
        else:
            probe.start_timer(loop)
        if stacks:
            probe.start_watchdog(threading.get_ident())
        try:
            return await serve(config, **kwargs)
        finally:
            probe.stop.set()

    def dump() -> None:
        with open(path, "w") as handle:
            json.dump({"samples": probe.samples, "stalls": probe.stalls.most_common(40)},
                      handle)

    broker_main.serve = probed_serve
    atexit.register(dump)


def main() -> int:
    path, *rest = sys.argv[1:]
    separator = rest.index("--")
    options, args = rest[:separator], rest[separator + 1:]
    unknown = set(options) - {"--thread-probe", "--stacks"}
    assert not unknown, f"usage: loop_probe.py SAMPLES.json [--thread-probe] [--stacks] -- " \
                        f"BROKER ARGS (unknown: {sorted(unknown)})"
    install(path, thread_probe="--thread-probe" in options, stacks="--stacks" in options)
    import tslog.broker.__main__ as broker_main
    return broker_main.main(args)


if __name__ == "__main__":
    sys.exit(main())
