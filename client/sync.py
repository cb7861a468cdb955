"""Blocking facades: ``Admin``, ``Producer``, ``Consumer`` over the asyncio core.

Why a private loop thread instead of a second, blocking implementation: one code path for
batching, retries and fetch pipelining, tested once. Each facade owns an event loop running
in a daemon thread; a method call hands a coroutine to that loop and waits for its result.
``Producer.send`` skips the hand-off on its fast path: it appends to the thread-safe
accumulator directly and wakes the loop only when a batch starts or fills.
"""

from __future__ import annotations

import asyncio
import threading
import time
from _thread import allocate_lock as _allocate_lock
import warnings

from ._admin import AsyncAdmin
from ._consumer import AsyncConsumer
from ._direct import DirectLookups
from ._producer import AsyncProducer
from ._types import AclBindingFilter
from .errors import ClientClosedError


try:  # uvloop's loop is several times cheaper per call and per I/O event than asyncio's
    from uvloop import new_event_loop as _new_event_loop
except ImportError:  # pragma: no cover - uvloop is a dependency where it builds
    _new_event_loop = asyncio.new_event_loop


class _LoopThread:
    """An event loop running forever in a daemon thread, until ``stop``."""

    def __init__(self, name: str) -> None:
        self.loop = _new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def run(self, coro, timeout: float | None = None):
        """Run ``coro`` on the loop and return its result (raising its exception).

        The hand-off is one ``call_soon_threadsafe`` and a bare lock released by the task's
        done callback: about half the cost of ``run_coroutine_threadsafe``, which chains a
        ``concurrent.futures.Future`` through a condition variable. That hop is most of a
        lookup's latency through the blocking client.
        """
        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError("a sync tslog client cannot be used from its own loop thread")
        waiter = _allocate_lock()
        waiter.acquire()
        state: list = [None, False]  # [task, abandoned by the caller]

        def start() -> None:
            if state[1]:
                coro.close()
                return
            task = state[0] = self.loop.create_task(coro)
            task.add_done_callback(lambda _: waiter.release())

        self.loop.call_soon_threadsafe(start)
        try:
            if not waiter.acquire(True, -1 if timeout is None else timeout):
                raise TimeoutError(f"no result within {timeout} s")
        except BaseException:  # a timeout, or e.g. KeyboardInterrupt while waiting
            state[1] = True
            self.loop.call_soon_threadsafe(_cancel, state)
            raise
        return state[0].result()

    def stop(self) -> None:
        """Cancel what still runs on the loop, stop it, join the thread, close the loop."""
        if self.loop.is_closed():
            return
        if threading.current_thread() is not self._thread and self._thread.is_alive():
            try:
                asyncio.run_coroutine_threadsafe(_cancel_all(), self.loop).result(10)
            except Exception:
                pass
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        if not self._thread.is_alive():
            self.loop.close()


def _cancel(state: list) -> None:
    if state[0] is not None:
        state[0].cancel()


async def _cancel_all() -> None:
    current = asyncio.current_task()
    tasks = [task for task in asyncio.all_tasks() if task is not current]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


class _Facade:
    """Shared lifecycle: start the async core, close once, warn if never closed."""

    _core = None
    _closed = True

    def _open(self, core, name: str) -> None:
        self._thread = _LoopThread(name)
        self._core = core
        try:
            self._thread.run(core.start())
        except BaseException:
            self._thread.run(core.close())
            self._thread.stop()
            raise
        self._closed = False

    def _run(self, coro, timeout: float | None = None):
        if self._closed:
            coro.close()
            raise ClientClosedError()
        return self._thread.run(coro, timeout)

    def close(self, timeout_ms: int | None = None) -> None:
        """Close connections and stop the loop thread. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        try:
            self._thread.run(self._close_core(timeout_ms))
        finally:
            self._thread.stop()

    async def _close_core(self, timeout_ms):
        await self._core.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def __del__(self) -> None:
        if not self._closed:
            warnings.warn(f"unclosed {type(self).__name__}; call close() or use 'with'",
                          ResourceWarning, source=self)
            self._closed = True
            try:  # close sockets too, without waiting to send anything
                self._thread.run(self._close_core(0), timeout=5)
            except BaseException:
                pass
            try:
                self._thread.stop()
            except Exception:
                pass


class Admin(_Facade):
    """Blocking ``AsyncAdmin``: ``Admin("127.0.0.1:9092").create_topic("events", 3)``."""

    def __init__(self, bootstrap, **options) -> None:
        self._open(AsyncAdmin(bootstrap, **options), "tslog-admin")

    def create_topic(self, name, partitions=1, replication_factor=1, config=None,
                     timeout_ms=None, *, exist_ok=False) -> bool:
        return self._run(self._core.create_topic(name, partitions, replication_factor, config,
                                                 timeout_ms, exist_ok=exist_ok))

    def create_partitions(self, new_totals, timeout_ms=None, validate_only=False) -> None:
        return self._run(self._core.create_partitions(new_totals, timeout_ms, validate_only))

    def delete_topic(self, name, timeout_ms=None) -> None:
        return self._run(self._core.delete_topic(name, timeout_ms))

    def alter_partition_reassignments(self, reassignments) -> None:
        return self._run(self._core.alter_partition_reassignments(reassignments))

    def list_partition_reassignments(self, partitions=None):
        return self._run(self._core.list_partition_reassignments(partitions))

    def elect_leaders(self, partitions=None):
        return self._run(self._core.elect_leaders(partitions))

    def list_topics(self):
        return self._run(self._core.list_topics())

    def describe_topic(self, name):
        return self._run(self._core.describe_topic(name))

    def brokers(self):
        return self._run(self._core.brokers())

    def describe_topics(self):
        return self._run(self._core.describe_topics())

    def describe_cluster(self):
        return self._run(self._core.describe_cluster())

    def describe_configs(self, name, resource_type="topic"):
        return self._run(self._core.describe_configs(name, resource_type))

    def alter_configs(self, name, configs, validate_only=False) -> None:
        return self._run(self._core.alter_configs(name, configs, validate_only))

    def delete_records(self, offsets, timeout_ms=30_000):
        return self._run(self._core.delete_records(offsets, timeout_ms))

    def list_offsets(self, timestamps, timestamp_type="append"):
        return self._run(self._core.list_offsets(timestamps, timestamp_type))

    def offsets_at_times(self, times, timestamp_type="append"):
        return self._run(self._core.offsets_at_times(times, timestamp_type))

    def offset_columns(self, partitions, times, timestamp_type="append"):
        return self._run(self._core.offset_columns(partitions, times, timestamp_type))

    def log_append_times(self, offsets):
        return self._run(self._core.log_append_times(offsets))

    def read_records(self, positions, limit=10):
        return self._run(self._core.read_records(positions, limit))

    def list_consumer_groups(self):
        return self._run(self._core.list_consumer_groups())

    def describe_consumer_groups(self, group_ids):
        return self._run(self._core.describe_consumer_groups(group_ids))

    def list_consumer_group_offsets(self, group_id):
        return self._run(self._core.list_consumer_group_offsets(group_id))

    def alter_consumer_group_offsets(self, group_id, offsets) -> None:
        return self._run(self._core.alter_consumer_group_offsets(group_id, offsets))

    def delete_consumer_groups(self, group_ids) -> None:
        return self._run(self._core.delete_consumer_groups(group_ids))

    def create_acls(self, bindings) -> None:
        return self._run(self._core.create_acls(bindings))

    def describe_acls(self, acl_filter=AclBindingFilter()):
        return self._run(self._core.describe_acls(acl_filter))

    def delete_acls(self, filters):
        return self._run(self._core.delete_acls(filters))

    def create_user(self, name, password, mechanism="SCRAM-SHA-512", iterations=8192) -> None:
        return self._run(self._core.create_user(name, password, mechanism, iterations))

    def delete_user(self, name, mechanism=None) -> None:
        return self._run(self._core.delete_user(name, mechanism))

    def list_users(self):
        return self._run(self._core.list_users())

    def describe_users(self, names=None):
        return self._run(self._core.describe_users(names))


class Producer(_Facade):
    """Blocking ``AsyncProducer``. ``send`` returns a future with ``get(timeout)``."""

    def __init__(self, bootstrap, **options) -> None:
        self._open(AsyncProducer(bootstrap, **options), "tslog-producer")
        # The hot path, one call deep. Given the loop thread's ``run``, not ``self._run``:
        # a closure holding the facade would make a cycle, and an unclosed producer would
        # then wait for the cyclic GC to warn and close.
        self.send = self._core.blocking_send(self._thread.run)

    def send(self, topic, value=None, key=None, partition=None, timestamp_ms=None,
             headers=None):
        """Queue a record; blocks only while the buffer is full or the topic is unknown.

        Each producer shadows this method with ``AsyncProducer.blocking_send``'s closure,
        made once in ``__init__``, which this calls too: the method is what ``help`` shows."""
        return self._core.blocking_send(self._run)(topic, value, key, partition,
                                                   timestamp_ms, headers)

    def send_batch(self, topic, values, keys=None, partition=None, timestamp_ms=None,
                   headers=None):
        """Queue many records in one call (see ``AsyncProducer.send_batch``).

        Returns a future whose ``get(timeout)`` gives the list of ``RecordMetadata``.
        """
        if self._closed:
            raise ClientClosedError()
        return self._core.send_batch_from_thread(self._run, topic, values, keys, partition,
                                                 timestamp_ms, headers)

    def send_section(self, topic, section, partition):
        """Queue a pre-encoded records section as one batch (see
        ``AsyncProducer.send_section``); the future is ``send_batch``'s."""
        if self._closed:
            raise ClientClosedError()
        return self._core.send_section_from_thread(self._run, topic, section, partition)

    def flush(self, timeout_ms: int | None = None) -> None:
        self._run(self._core.flush(timeout_ms))

    def partitions_for(self, topic):
        return self._run(self._core.partitions_for(topic))

    async def _close_core(self, timeout_ms):
        await self._core.close(timeout_ms)


class Consumer(_Facade):
    """Blocking ``AsyncConsumer``: ``Consumer("127.0.0.1:9092", group_id="replay")``.

    A group member's rebalance listener runs on the thread that calls ``poll`` (or
    ``unsubscribe``/``close``), as in Kafka; heartbeats go on in the loop thread meanwhile.
    """

    def __init__(self, bootstrap, *topics, **options) -> None:
        self._open(AsyncConsumer(bootstrap, *topics, **options), "tslog-consumer")
        self._direct = DirectLookups(self._core.cluster)

    def close(self, timeout_ms: int | None = None) -> None:
        """Commit (with auto-commit), tell the listener, leave the group, then close."""
        if not self._closed:
            try:
                self._give_up_partitions()
            except Exception:  # closing goes on: the session timeout frees the partitions
                pass
        super().close(timeout_ms)

    async def _close_core(self, timeout_ms):
        self._direct.close()
        await self._core.close()

    def _give_up_partitions(self) -> None:
        change = self._run(self._core._leave_plan())
        self._call_listener(change)
        self._run(self._core._leave_group())

    def _call_listener(self, change) -> None:
        for method, partitions in self._core._listener_calls(change):
            method(partitions)

    def _call(self, function, *args):
        async def call():
            return function(*args)
        return self._run(call())

    def assign(self, partitions) -> None:
        self._call(self._core.assign, partitions)

    def subscribe(self, topics=None, *, pattern=None, listener=None) -> None:
        """See ``AsyncConsumer.subscribe``; ``listener`` methods run inside ``poll``."""
        self._call(lambda: self._core.subscribe(topics, pattern=pattern, listener=listener))

    def unsubscribe(self) -> None:
        self._give_up_partitions()
        self._run(self._core.unsubscribe())

    def assignment(self):
        return self._call(self._core.assignment)

    def seek(self, tp, offset) -> None:
        self._call(self._core.seek, tp, offset)

    def seek_to_beginning(self, *partitions) -> None:
        self._run(self._core.seek_to_beginning(*partitions))

    def seek_to_end(self, *partitions) -> None:
        self._run(self._core.seek_to_end(*partitions))

    def seek_to_timestamp(self, timestamp_ms, timestamp_type="append", partitions=None) -> None:
        self._run(self._core.seek_to_timestamp(timestamp_ms, timestamp_type, partitions))

    def offsets_for_times(self, timestamps, timestamp_type="append"):
        """Answered on this thread when one known leader holds every partition (the usual
        case; see ``_direct.py``), else through the loop thread with retries."""
        if not self._closed:
            found = self._direct.offsets_for_times(timestamps, timestamp_type)
            if found is not None:
                return found
        return self._run(self._core.offsets_for_times(timestamps, timestamp_type))

    def end_offsets(self, partitions):
        return self._run(self._core.end_offsets(partitions))

    def beginning_offsets(self, partitions):
        return self._run(self._core.beginning_offsets(partitions))

    def position(self, tp) -> int:
        return self._run(self._core.position(tp))

    def poll(self, timeout_ms: int = 0, max_records: int | None = None):
        core = self._core
        return self._poll(timeout_ms, lambda fetcher: core._drain(fetcher, max_records))

    def poll_batches(self, timeout_ms: int = 0):
        return self._poll(timeout_ms, self._core._drain_columns)

    def _poll(self, timeout_ms: int, drain):
        """``AsyncConsumer._poll_rebalancing``, with the listener called on this thread."""
        deadline = time.monotonic() + timeout_ms / 1000
        while True:
            # One loop hop less for a consumer outside group management (the hot path).
            change = (self._run(self._core._rebalance_begin())
                      if self._core._membership is not None else None)
            if change is not None:
                try:
                    self._call_listener(change)
                finally:
                    self._call(self._core._rebalance_end, change)
            remaining_ms = max(0.0, deadline - time.monotonic()) * 1000
            records = self._run(self._core._poll(remaining_ms, drain))
            if records or time.monotonic() >= deadline:
                return records

    def commit(self, offsets=None) -> None:
        self._run(self._core.commit(offsets))

    def commit_async(self, offsets=None, callback=None):
        """Start a commit and return a ``concurrent.futures.Future`` at once;
        ``callback(offsets, exception_or_None)`` runs on the loop thread when it is done."""
        if self._closed:
            raise ClientClosedError()
        offsets = self._call(self._core._positions) if offsets is None else dict(offsets)
        future = asyncio.run_coroutine_threadsafe(self._core.commit(offsets), self._thread.loop)
        if callback is not None:
            future.add_done_callback(lambda f: callback(
                offsets, None if f.cancelled() else f.exception()))
        return future

    def committed(self, tp):
        return self._run(self._core.committed(tp))

    def highwater(self, tp):
        return self._call(self._core.highwater, tp)
