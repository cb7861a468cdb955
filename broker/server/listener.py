"""``serve``: open the data directory, listen, run periodic work, shut down gracefully.

Order at startup: signal handlers first (a SIGTERM during a long recovery still exits
cleanly), then the logs are opened (recovery) in a thread, then the metrics endpoint starts
(if ``metrics_listen`` is set), and only then does the broker listen, so a client that can
connect is talking to a broker whose logs are ready. The readiness line
``tslog-broker listening on HOST:PORT`` is logged once the socket is bound.

Shutdown (the trigger fires: SIGTERM, SIGINT, or the test's awaitable): stop accepting, stop
reading requests, give in-flight ones ``shutdown_grace_ms`` to be answered, stop the periodic
tasks, stop the metrics endpoint, then flush and close every log in a thread, which leaves
the clean-shutdown markers.

TLS (``tls_cert_file`` set, ``security/tls.py``): the server context is built before the
logs open, so a bad file stops the broker at once; the listener wraps every connection with
that one context, and SIGHUP reloads the files into it (and into the context replication dials
peers with) without touching the listener or open connections.

Clustered (``etcd_endpoints`` set), opening means joining the cluster first
(``cluster_sync.open_clustered``: register, then open the hosted partitions' logs), and
shutting down means leaving it (revoking the lease) before the logs close; losing our
registration to another broker stops the broker like a SIGTERM, with exit code 1.
"""

from __future__ import annotations

import asyncio
import errno
import json
import logging
import os
import signal
from typing import Awaitable, Callable

from tslog.protocol.messages import compile_schemas

from ..cluster.errors import DuplicateBrokerError
from ..config import BrokerConfig, ConfigError, parse_host_port
from ..listen_checks import metrics_protected_mode_problem
from ..metrics import MetricsServer
from ..metrics.observe import record_recovery
from ..metrics.web_config import WebConfig, WebConfigError, load_web_config
from ..security import tls
from ..storage import dir_lock
from ..storage.fanout import map_in_threads
from .connection import BrokerConnection
from .native_front import NativeFront
from .connection_registry import ConnectionRegistry
from .kafka.front import KafkaFront
from .kafka.services import KafkaServices, services_for
from .state import Broker

log = logging.getLogger("tslog.broker")


class ListenError(OSError):
    """A port the broker was told to listen on cannot be bound: one line naming the address
    and the setting, instead of the socket layer's tuple-and-errno text."""

    def __init__(self, setting: str, host: str, port: int, cause: OSError) -> None:
        reason = os.strerror(cause.errno) if cause.errno else str(cause)
        hint = ("; another program (or broker) is listening there: stop it or choose "
                f"another port with {setting}") if cause.errno == errno.EADDRINUSE else ""
        super().__init__(cause.errno, f"cannot listen on {host}:{port} ({setting}): "
                                      f"{reason.lower()}{hint}")

    def __str__(self) -> str:
        return self.strerror


def _install_signals(loop: asyncio.AbstractEventLoop, stop: asyncio.Event) -> list[int]:
    installed = []
    for signum in (signal.SIGTERM, signal.SIGINT):
        try:
            loop.add_signal_handler(signum, stop.set)
            installed.append(signum)
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread
            pass
    return installed


async def _periodically(interval_ms: int, work: Callable[[], Awaitable[None]], name: str) -> None:
    while True:
        await asyncio.sleep(interval_ms / 1000)
        try:
            await work()
        except Exception:
            log.exception("periodic %s failed", name)


async def _retention(broker: Broker) -> None:
    """Retention of every log, in a worker thread: deleting segments (unlinks, closes) and the
    checkpoint after it (two fsyncs) would otherwise stall every connection. The storage
    engine allows it beside appends and reads (see ``PartitionLog``); a topic deleted
    meanwhile is skipped."""
    topics = broker.topics
    logs = list(topics.logs.items())
    keep = broker.replicas.high_watermarks()  # nothing uncommitted is deleted
    await asyncio.to_thread(
        lambda: [topics.apply_retention(key, plog, keep.get(key)) for key, plog in logs])


async def _checkpoints(broker: Broker) -> None:
    """Every log's recovery-point checkpoint, in a worker thread (each is an atomic file write
    with two fsyncs); ``PartitionLog.checkpoint`` orders concurrent writers itself. The
    replication state (high watermark, producers) is snapshotted on the loop, which owns it,
    and written in the thread too."""
    topics = broker.topics
    logs = list(topics.logs.items())
    await asyncio.to_thread(map_in_threads, lambda item: topics.checkpoint(*item), logs,
                            "tslog-checkpoint")
    snapshots = broker.replicas.snapshots()  # replication state is the loop's: read it here
    await asyncio.to_thread(broker.replicas.write_snapshots, snapshots)


async def serve(config: BrokerConfig, *, shutdown_trigger: Awaitable | None = None,
                ready: Callable[[str, int], None] | None = None) -> None:
    """Run a broker until ``shutdown_trigger`` completes (default: SIGTERM or SIGINT).

    The data directory's lock comes first, before anything reads, recovers or writes there
    and before a port is bound: a second broker on the directory stops with
    ``DataDirectoryLockedError`` having touched nothing (``storage.dir_lock``).

    Args:
        config: the effective configuration.
        shutdown_trigger: any awaitable; tests pass an event's ``wait()``.
        ready: called with (host, port) once the broker listens (tests use port 0).
    """
    lock = dir_lock.acquire(config.data_dir)
    try:
        await _serve_locked(config, shutdown_trigger, ready)
    finally:
        dir_lock.release(lock)


def _changed_settings(config: BrokerConfig) -> dict:
    """The settings an operator chose (those not at their defaults, ``[log]`` key by key):
    what a reader of the start-up line wants, where every setting is a 2.5 KB line."""
    chosen, default = config.describe(), BrokerConfig().describe()
    changed = {k: v for k, v in chosen.items() if k != "log" and v != default[k]}
    log_changed = {k: v for k, v in chosen["log"].items() if v != default["log"].get(k)}
    if log_changed:
        changed["log"] = log_changed
    return changed


async def _serve_locked(config: BrokerConfig, shutdown_trigger: Awaitable | None,
                        ready: Callable[[str, int], None] | None) -> None:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    installed = _install_signals(loop, stop) if shutdown_trigger is None else []
    log.info("effective config (settings not at their defaults; --log-level DEBUG logs "
             "every one): %s", json.dumps(_changed_settings(config), default=str))
    log.debug("effective config, every setting: %s", json.dumps(config.describe(), default=str))
    server_ssl = tls.server_context(config)  # before the logs open: a bad file stops at once
    try:
        web = _web_config(config)  # before recovery: a bad file stops the start at once
        view = None
        if config.clustered:  # imported here: a single node never loads the etcd client
            from .cluster_sync import open_clustered
            broker, view = await open_clustered(config)
        else:
            broker = await asyncio.to_thread(Broker.open, config)
        compile_schemas()  # before the first request, which would wait for it (~ms per API)
        record_recovery(broker.topics.logs.values())
        metrics = None
        try:
            if config.metrics_listen is not None:
                metrics_address = parse_host_port(config.metrics_listen)
                try:
                    metrics = MetricsServer(broker.scrape_sources, loop, *metrics_address,
                                            web=web)
                except OSError as exc:
                    raise ListenError("--metrics-listen", *metrics_address, exc) from None
            trigger = stop.wait() if shutdown_trigger is None else shutdown_trigger
            if view is not None:
                trigger = _first(trigger, asyncio.shield(view.failed))
            # A task, so that a failure to listen cancels it instead of leaving a coroutine
            # that was never awaited (Python warns about those on exit).
            trigger = asyncio.ensure_future(trigger)
            try:
                await _serve_opened(broker, config, trigger, ready, server_ssl, metrics)
            finally:
                trigger.cancel()
            if view is not None and view.failed.done():
                raise DuplicateBrokerError(view.failed.result())
        finally:
            await broker.acls.close()  # a cluster's watch of etcd's ACLs
            if view is not None:  # leave the cluster first: others take over at once
                await broker.authenticator.store.close()  # its etcd watch, before the client
                await view.close()
            if metrics is not None:
                await asyncio.to_thread(metrics.stop)
            broker.lifecycle.closing = True  # a scrape still under way reads no log now on
            await asyncio.to_thread(broker.close)
            log.info("tslog-broker stopped")
    finally:
        for signum in installed:
            loop.remove_signal_handler(signum)


async def _listen_kafka(broker: Broker, config: BrokerConfig, registry: ConnectionRegistry,
                        server_ssl) -> asyncio.Server | None:
    """The Kafka listener (``kafka_listen``; None when unset): same TLS context, connection
    registry and handlers as the native one. Logs ``tslog-broker Kafka listener on
    HOST:PORT`` with the bound port (``kafka_listen`` may say port 0)."""
    if config.kafka_listen is None:
        return None
    loop = asyncio.get_running_loop()
    host, port = parse_host_port(config.kafka_listen)
    def make_services(connection: BrokerConnection) -> KafkaServices:
        return services_for(broker, connection)

    front = KafkaFront(make_services)
    try:
        server = await loop.create_server(
            lambda: BrokerConnection(front, config, broker.idle_poller, registry,
                                     broker.authenticator),
            host, port,
            reuse_address=True, backlog=1024, ssl=server_ssl,
            **tls.server_timeouts(server_ssl))
    except OSError as exc:
        raise ListenError("--kafka-listen", host, port, exc) from None
    bound_port = server.sockets[0].getsockname()[1]
    broker.set_kafka_port(bound_port)
    log.info("tslog-broker Kafka listener on %s:%d%s", host, bound_port,
             " (TLS)" if server_ssl is not None else "")
    return server


def _web_config(config: BrokerConfig) -> WebConfig | None:
    """The /metrics web config, read and checked; raises ConfigError naming the file (or
    protected mode's refusal of one that lets anyone on other hosts read)."""
    if config.metrics_web_config_file is None:
        return None
    try:
        web = load_web_config(config.metrics_web_config_file)
    except WebConfigError as exc:
        raise ConfigError(str(exc)) from None
    for problem in metrics_protected_mode_problem(config, web.authenticates):
        raise ConfigError(f"invalid broker configuration: {problem}")
    return web


async def _first(*awaitables: Awaitable) -> None:
    """Return when the first of ``awaitables`` completes (SIGTERM, or a lost cluster seat)."""
    tasks = [asyncio.ensure_future(a) for a in awaitables]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            if not task.done():
                task.cancel()


def _reload_on_sighup(loop: asyncio.AbstractEventLoop, broker: Broker, config: BrokerConfig,
                      server_ssl, metrics: MetricsServer | None) -> bool:
    """SIGHUP reloads the TLS files into the live contexts (``security.tls.reload``) and the
    metrics endpoint's web config (in a thread: it reads files); with neither it is logged
    and ignored, so a ``systemctl reload`` never stops a broker."""
    contexts = [c for c in (server_ssl, broker.replicas.peer_ssl) if c is not None]
    web_config = metrics if config.metrics_web_config_file and metrics is not None else None

    def reload() -> None:
        if server_ssl is not None:
            tls.reload(contexts, config)
        if web_config is not None:
            loop.run_in_executor(None, web_config.reload)
        if server_ssl is None and web_config is None:
            log.info("SIGHUP: no TLS configured, nothing to reload")

    try:
        loop.add_signal_handler(signal.SIGHUP, reload)
    except (NotImplementedError, RuntimeError, ValueError):  # not the main thread
        return False
    return True


async def _serve_opened(broker: Broker, config: BrokerConfig, trigger: Awaitable,
                        ready: Callable[[str, int], None] | None, server_ssl=None,
                        metrics: MetricsServer | None = None) -> None:
    loop = asyncio.get_running_loop()
    registry = ConnectionRegistry.from_config(config)
    host, port = config.listen_address
    front, idle_poller = NativeFront(broker.dispatch, broker.gate), broker.idle_poller
    authenticator = broker.authenticator
    if config.sasl_bootstrap_users_file:  # before the first client can try to log in
        created = await authenticator.store.bootstrap(config.sasl_bootstrap_users_file)
        log.info("sasl_bootstrap_users_file: %d new users (%s); existing users unchanged",
                 len(created), ", ".join(created) or "none")
    try:
        server = await loop.create_server(
            lambda: BrokerConnection(front, config, idle_poller, registry, authenticator),
            host, port, reuse_address=True, backlog=1024, ssl=server_ssl,
            start_serving=False, **tls.server_timeouts(server_ssl))
    except OSError as exc:
        raise ListenError("--listen", host, port, exc) from None
    reloads = _reload_on_sighup(loop, broker, config, server_ssl, metrics)
    bound_port = server.sockets[0].getsockname()[1]
    broker.set_bound_port(bound_port)
    try:
        kafka_server = await _listen_kafka(broker, config, registry, server_ssl)
    except BaseException:
        server.close()
        raise
    # The native port serves last: once it answers, the Kafka port does too (a client or a
    # test that waits for the first finds both).
    await server.start_serving()
    tasks = {
        asyncio.create_task(_periodically(config.log_retention_check_interval_ms,
                                          lambda: _retention(broker), "retention")),
        asyncio.create_task(_periodically(config.log_checkpoint_interval_ms,
                                          lambda: _checkpoints(broker), "checkpoint")),
    }
    broker.replicas.start()
    broker.groups.start()
    broker.classic_groups.start()
    log.info("tslog-broker listening on %s:%d%s", host, bound_port,
             " (TLS)" if server_ssl is not None else "")
    if ready is not None:
        ready(host, bound_port)
    try:
        await trigger
    finally:
        log.info("shutting down: no new connections, draining in-flight requests")
        server.close()
        if kafka_server is not None:
            kafka_server.close()
        broker.lifecycle.stopping = True
        broker.notifier.notify_all()
        await registry.drain(config.shutdown_grace_ms / 1000)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await broker.replicas.stop()
        await broker.groups.stop()
        await broker.classic_groups.stop()
        await server.wait_closed()
        if kafka_server is not None:
            await kafka_server.wait_closed()
        if reloads:
            loop.remove_signal_handler(signal.SIGHUP)
