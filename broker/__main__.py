"""``tslog-broker``: parse flags, build the config, run the broker on uvloop.

Flags default to a sentinel (argparse.SUPPRESS), so only flags actually passed override the
config file and the environment. Exit codes: 0 after a clean shutdown, 2 for a bad
configuration (every problem printed), 1 if the broker could not start (e.g. port in use).
"""

from __future__ import annotations

import argparse
import asyncio
import faulthandler
import importlib.metadata
import logging
import os
import sys

from .allocator import keep_large_blocks_in_the_heap
from .collector import freeze_startup_objects
from .cluster.errors import ClusterError
from .config import ConfigError, load_config
from .server import serve
from .storage.dir_lock import DataDirectoryLockedError

log = logging.getLogger("tslog.broker")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tslog-broker", argument_default=argparse.SUPPRESS,
        description="Run a tslog broker. Settings: defaults < --config TOML < TSLOG_* "
                    "environment < these flags.")
    parser.add_argument("--version", action="version",
                        version=f"tslog-broker {_installed_version()}",
                        help="print the installed tslog version and exit")
    parser.add_argument("--config", help="TOML config file")
    parser.add_argument("--data-dir", dest="data_dir", help="data directory (./tslog-data)")
    parser.add_argument("--allow-anonymous", dest="allow_anonymous", action="store_true",
                        help="accept unauthenticated clients on a non-loopback --listen "
                             "(protected mode refuses to start otherwise)")
    parser.add_argument("--listen", help="HOST:PORT for clients (127.0.0.1:9092)")
    parser.add_argument("--kafka-listen", dest="kafka_listen",
                        help="HOST:PORT speaking Kafka's protocol to Kafka clients (off unless "
                             "given; docs/kafka.md)")
    parser.add_argument("--metrics-listen", dest="metrics_listen", help="HOST:PORT serving Prometheus /metrics (off unless given)")
    parser.add_argument("--metrics-web-config", dest="metrics_web_config_file",
                        help="Prometheus web config YAML: TLS and basic auth for /metrics")
    parser.add_argument("--etcd-ca-file", dest="etcd_ca_file",
                        help="PEM CA file to verify etcd with (TLS to etcd)")
    parser.add_argument("--etcd-cert-file", dest="etcd_cert_file",
                        help="PEM client certificate presented to etcd")
    parser.add_argument("--etcd-key-file", dest="etcd_key_file",
                        help="private key of --etcd-cert-file")
    parser.add_argument("--node-id", dest="node_id", help="this broker's node id (0)")
    parser.add_argument("--authorizer-enabled", dest="authorizer_enabled", nargs="?",
                        const="true", help="check every request against the ACLs (false)")
    parser.add_argument("--super-users", dest="super_users",
                        help='principals allowed everything, "User:admin;User:CN=broker0"')
    parser.add_argument("--allow-everyone-if-no-acl-found",
                        dest="allow_everyone_if_no_acl_found", nargs="?", const="true",
                        help="a resource no ACL names is open to everyone (false)")
    parser.add_argument("--tls-cert-file", dest="tls_cert_file",
                        help="PEM certificate: the listener speaks TLS (with --tls-key-file)")
    parser.add_argument("--tls-key-file", dest="tls_key_file", help="PEM key of the certificate")
    parser.add_argument("--tls-ca-file", dest="tls_ca_file",
                        help="PEM CAs for client and peer-broker certificates")
    parser.add_argument("--tls-client-auth", dest="tls_client_auth",
                        choices=("none", "requested", "required"),
                        help="client certificates (none; required = mutual TLS)")
    parser.add_argument("--log-level", dest="log_level", default="INFO",
                        help="logging level (INFO)")
    return parser


def _installed_version() -> str:
    """The distribution's version (the broker may not import the client's helper for it)."""
    try:
        return importlib.metadata.version("tslog")
    except importlib.metadata.PackageNotFoundError:
        return "unknown (not installed)"


def _loop_factory():
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency except on Windows
        return None
    return uvloop.new_event_loop


def _started(host: str, port: int) -> None:
    """Once listening: the objects of start-up leave the cycle collector (``collector``)."""
    log.debug("froze %d start-up objects out of the cycle collector", freeze_startup_objects())


def _leave_a_stack_on_fatal_signals() -> None:
    """A fatal signal (SIGBUS, SIGSEGV) prints every thread's stack into the broker's log
    (stderr) before the process dies, so a crash at start or under load says where."""
    try:
        faulthandler.enable(sys.stderr)
    except (OSError, ValueError):  # a stderr without a descriptor (a caller's capture)
        pass


def parse_flags(argv: list[str] | None) -> tuple[dict, str | None, str]:
    """(config fields actually passed, --config path or None, log level)."""
    args = vars(build_parser().parse_args(argv))
    return args, args.pop("config", None), args.pop("log_level")


def main(argv: list[str] | None = None) -> int:
    flags, config_path, log_level = parse_flags(argv)
    logging.basicConfig(level=log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    _leave_a_stack_on_fatal_signals()
    try:
        config, ignored = load_config(flags, config_path, os.environ)
    except ConfigError as exc:
        print(f"tslog-broker: {exc}", file=sys.stderr)
        return 2
    for name in ignored:
        log.warning("ignoring environment variable %s: not a broker setting", name)
    keep_large_blocks_in_the_heap()
    try:
        with asyncio.Runner(loop_factory=_loop_factory()) as runner:
            runner.run(serve(config, ready=_started))
    except ConfigError as exc:  # files the settings name, read at start (web config)
        print(f"tslog-broker: {exc}", file=sys.stderr)
        return 2
    except DataDirectoryLockedError as exc:  # another broker serves it: nothing was touched
        print(f"tslog-broker: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        log.error("tslog-broker could not start: %s", exc)
        return 1
    except ClusterError as exc:
        log.error("tslog-broker could not join the cluster: %s", exc)
        return 1
    except Exception:
        log.exception("tslog-broker failed")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
