"""``tslog consume TOPIC --group G``: read a share of the topic as a member of G, committing
each record only once it is printed."""

from __future__ import annotations

import contextlib
import signal
import sys
import threading

from . import Admin, Consumer, ConsumerRebalanceListener, TopicPartition
from .cli_positions import end_offsets, resolve_start
from .cli_properties import consumer_options
from .errors import TslogError

_POLL_MS = 200


class _GroupProgress(ConsumerRebalanceListener):
    """``consume --group``'s bookkeeping: where partitions it gets start (``--from-time``, the
    first time this process gets each) and end (``--to-time``), and the offset after the last
    record printed, which is what it commits: a record is committed only once printed."""

    def __init__(self, consumer, args) -> None:
        self.consumer, self.args = consumer, args
        self.printed: dict[TopicPartition, int] = {}
        self.committed: dict[TopicPartition, int] = {}
        self.ends: dict[TopicPartition, int] = {}
        self.seen: set[TopicPartition] = set()

    def on_partitions_assigned(self, assigned) -> None:
        new = sorted(tp for tp in assigned if tp not in self.seen)
        self.seen.update(new)
        if new and self.args.from_time is not None:
            resolve_start(self.consumer, new, self.args.from_time, self.args.timestamp_type)
        if new and self.args.to_time:
            self.ends.update(end_offsets(self.consumer, new, self.args.to_time,
                                         self.args.timestamp_type))

    def on_partitions_revoked(self, revoked) -> None:
        self.commit(revoked)

    def on_partitions_lost(self, lost) -> None:
        self._forget(lost)  # another member reads them from the last accepted commit

    def commit(self, partitions=None) -> None:
        """Commit what was printed since the last commit (of ``partitions``, or all)."""
        offsets = {tp: offset for tp, offset in self.printed.items()
                   if (partitions is None or tp in partitions)
                   and self.committed.get(tp) != offset}
        if offsets:
            try:
                self.consumer.commit(offsets)
                self.committed.update(offsets)
            except TslogError as error:  # moved on: the next reader starts at the last commit
                print(f"tslog: warning: commit failed: {error}", file=sys.stderr)
        if partitions is not None:
            self._forget(partitions)

    def _forget(self, partitions) -> None:
        for tp in partitions:
            self.printed.pop(tp, None)
            self.committed.pop(tp, None)

    def finished(self) -> bool:
        """With --to-time: every partition held is at its end."""
        held = self.consumer.assignment()
        return bool(held) and all(tp in self.ends and self.consumer.position(tp) >= self.ends[tp]
                                  for tp in held)


@contextlib.contextmanager
def _ctrl_c_sets(flag: threading.Event):
    """SIGINT (Ctrl-C) sets ``flag`` instead of raising KeyboardInterrupt wherever the main
    thread happens to be.

    Why: raised inside the client's blocking calls (a poll or a commit waiting on the
    client's I/O thread), the interrupt can leave them waiting for ever: in CI a
    ``tslog consume --group`` did not exit for 20 minutes after Ctrl-C. The consume loop looks
    at the flag between polls (every 200 ms), then commits what it printed and leaves the
    group. A second Ctrl-C raises at once, for a broker that no longer answers.
    """
    def first(signum, frame) -> None:
        flag.set()
        signal.signal(signal.SIGINT, signal.default_int_handler)

    try:
        previous = signal.signal(signal.SIGINT, first)
    except ValueError:  # not the main thread (a program embedding the CLI): its handling stays
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def consume_group(args, render) -> None:
    """Print records with ``render`` as a member of ``args.group``, committing after every
    batch printed and on the way out (Ctrl-C included: exit status 130 once committed and
    out of the group)."""
    with Admin(args.bootstrap, security=args.security) as admin:
        admin.describe_topic(args.topic)  # an unknown topic is an error, not a wait
    interrupted = threading.Event()
    with _ctrl_c_sets(interrupted), Consumer(
            args.bootstrap, security=args.security, group_id=args.group,
            auto_offset_reset="earliest", enable_auto_commit=False,
            **consumer_options(args)) as consumer:
        progress = _GroupProgress(consumer, args)
        consumer.subscribe([args.topic], listener=progress)
        remaining = args.max_messages
        write = sys.stdout.write
        try:
            while ((remaining is None or remaining > 0) and not interrupted.is_set()
                   and not (args.to_time and progress.finished())):
                for record in consumer.poll(_POLL_MS):
                    tp = TopicPartition(record.topic, record.partition)
                    if tp in progress.ends and record.offset >= progress.ends[tp]:
                        continue
                    write(render(record))
                    progress.printed[tp] = record.offset + 1
                    if remaining is not None:
                        remaining -= 1
                        if remaining == 0:
                            break
                sys.stdout.flush()
                progress.commit()
        finally:
            progress.commit()
    if interrupted.is_set():
        raise KeyboardInterrupt  # ``cli.main``: exit status 130, as for any interrupted command
