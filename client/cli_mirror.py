"""``tslog mirror`` (also ``tslog-mirror``) and ``tslog groups translate``.

    tslog mirror --source HOST:PORT --target HOST:PORT --topics REGEX [--rename TEMPLATE]
        [--replication-factor N] [--checkpoint-interval 5s] [--metrics-listen HOST:PORT]
        [--source-config FILE] [--target-config FILE]
        [--config FILE]                          # a [mirror] section gives the same options
    tslog groups translate GROUP --source HOST:PORT --target HOST:PORT [--rename TEMPLATE]
        [--max-latency 60s] [--wait 0s] [--execute] [--source-config FILE] [--target-config FILE]
    tslog groups translate GROUP --source HOST:PORT --target HOST:PORT --to-datetime TIME
        [--topic TOPIC ...] [--rename TEMPLATE] [--wait 0s] [--execute]

Each cluster has its own security: ``--source-config``/``--target-config`` name a Kafka-style
properties file each (the format of every command's ``--command-config``); a password comes
from that file or from ``$TSLOG_SOURCE_SASL_PASSWORD``/``$TSLOG_TARGET_SASL_PASSWORD``,
never from a flag.

Why its own module: the mirror is a long-running service (it logs, serves /metrics and stops
on SIGTERM/SIGINT), unlike the other one-shot commands; ``cli.py`` and ``cli_groups.py`` only
register what is here. docs/mirror.md documents every option.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import signal
import sys
import threading
import tomllib

from ._cluster import parse_bootstrap
from .cli_common import (EXPECTED_ERRORS, UsageError, error_line, installed_version,
                         plural)
from .security import Security

_DURATION = re.compile(r"^(\d+)(ms|s|m|h)$")
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000}
_OPTIONS = ("source", "target", "topics", "rename", "replication_factor",
            "checkpoint_interval", "metrics_listen", "source_config", "target_config")
# Each cluster's SASL password when its properties file gives none (never a flag).
_SECURITY_OPTIONS = "--source-config FILE or --target-config FILE"
PASSWORD_ENV = {"source": "TSLOG_SOURCE_SASL_PASSWORD", "target": "TSLOG_TARGET_SASL_PASSWORD"}


def duration_ms(text: str) -> int:
    """``"60s"`` -> 60000; ``ms``, ``s``, ``m``, ``h``, or a bare number of milliseconds."""
    text = str(text).strip()
    if text.isdigit():
        return int(text)
    match = _DURATION.match(text)
    if not match:
        raise UsageError(f"{text!r} is not a duration such as 500ms, 5s, 2m or 1h")
    return int(match.group(1)) * _UNIT_MS[match.group(2)]


def register(commands, common) -> None:
    parser = commands.add_parser("mirror", help="copy topics to another cluster (a service)")
    add_mirror_options(parser)
    parser.set_defaults(handler=run_mirror)


def add_mirror_options(parser) -> None:
    parser.add_argument("--config", metavar="FILE",
                        help="a TOML file whose [mirror] section sets these options "
                             "(the command line wins)")
    parser.add_argument("--source", metavar="HOST:PORT", help="the cluster to copy from")
    parser.add_argument("--target", metavar="HOST:PORT", help="the cluster to copy to")
    parser.add_argument("--topics", metavar="REGEX",
                        help="source topics to copy (a regular expression, whole name)")
    parser.add_argument("--rename", metavar="TEMPLATE",
                        help="target topic name; {topic} is the source's (default: {topic})")
    parser.add_argument("--replication-factor", type=int, metavar="N",
                        help="for topics the mirror creates on the target (default: 1)")
    parser.add_argument("--checkpoint-interval", metavar="DURATION",
                        help="how often group checkpoints are written (default: 5s)")
    parser.add_argument("--metrics-listen", metavar="HOST:PORT",
                        help="serve Prometheus metrics on http://HOST:PORT/metrics")
    add_cluster_security_options(parser)


def add_cluster_security_options(parser) -> None:
    """``--source-config`` and ``--target-config``: each cluster's own security."""
    for role in ("source", "target"):
        parser.add_argument(f"--{role}-config", metavar="FILE",
                            help=f"Kafka-style properties file of the {role} cluster's security "
                                 f"(security.protocol, ssl.ca.location, sasl.username ...); "
                                 f"the SASL password is the file's sasl.password(.file) or "
                                 f"${PASSWORD_ENV[role]}")


def cluster_security(path: str | None, role: str) -> Security | None:
    """The ``Security`` of the ``role`` cluster from its properties file; None = plain TCP.
    Raises SecurityConfigError (one line, never the password)."""
    if not path:
        return None
    return Security.from_file(path, password=os.environ.get(PASSWORD_ENV[role]))


def add_translate_command(actions, common) -> None:
    translate = actions.add_parser("translate", parents=[common],
                                   help="map a group's source offsets to a mirror's target")
    translate.add_argument("group", help="the consumer group's id")
    translate.add_argument("--source", required=True, metavar="HOST:PORT",
                           help="the mirrored cluster (its checkpoint is used if it is down)")
    translate.add_argument("--target", required=True, metavar="HOST:PORT",
                           help="the mirror's target cluster")
    translate.add_argument("--rename", default="{topic}", metavar="TEMPLATE",
                           help="the mirror's --rename (default: {topic})")
    translate.add_argument("--max-latency", default="60s", metavar="DURATION",
                           help="the time method's bound on the mirror's delay (default: 60s)")
    translate.add_argument("--execute", action="store_true",
                           help="commit the exact offsets for the group on the target")
    translate.add_argument("--to-datetime", metavar="TIME",
                           help="fail over by time instead: the first target record whose "
                                "source LogAppendTime is >= TIME (ISO-8601, epoch ms or -15m)")
    translate.add_argument("--topic", action="append", default=[], metavar="TOPIC",
                           help="with --to-datetime: a source topic to move (repeatable; "
                                "default: the topics the group has committed offsets on)")
    translate.add_argument("--wait", default="0s", metavar="DURATION",
                           help="while the target has not copied every record the group read, "
                                "wait up to this long for the mirror (progress on stderr), "
                                "then fail committing nothing (default: 0s, fail at once)")
    add_cluster_security_options(translate)
    translate.set_defaults(handler=run_translate)


def _settings(args) -> dict:
    settings = {"rename": "{topic}", "replication_factor": 1, "checkpoint_interval": "5s",
                "metrics_listen": None, "source_config": None, "target_config": None}
    if args.config:
        with open(args.config, "rb") as file:
            try:
                section = tomllib.load(file).get("mirror", {})
            except tomllib.TOMLDecodeError as error:
                raise UsageError(f"{args.config}: {error}") from None
        unknown = sorted(set(section) - {name.replace("_", "-") for name in _OPTIONS}
                         - set(_OPTIONS))
        if unknown:
            raise UsageError(f"{args.config}: unknown [mirror] option {unknown[0]!r}")
        settings.update({key.replace("-", "_"): value for key, value in section.items()})
    settings.update({name: getattr(args, name) for name in _OPTIONS
                     if getattr(args, name) is not None})
    for required in ("source", "target", "topics"):
        if not settings.get(required):
            raise UsageError(f"--{required} is required (or set it in a [mirror] config file)")
    parse_bootstrap(settings["source"])
    parse_bootstrap(settings["target"])
    try:
        re.compile(settings["topics"])
        settings["rename"].format(topic="t")
    except re.error as error:
        raise UsageError(f"--topics is not a regular expression: {error}") from None
    except (KeyError, IndexError, ValueError):
        raise UsageError("--rename may only use {topic}") from None
    if settings["metrics_listen"]:
        parse_bootstrap(settings["metrics_listen"])
    return settings


def run_mirror(args) -> int:
    from .mirror import Mirror
    from .mirror.metrics import MirrorMetrics

    settings = _settings(args)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logger = logging.getLogger("tslog.mirror")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    metrics = MirrorMetrics()
    if settings["metrics_listen"]:
        metrics.serve(settings["metrics_listen"])
    mirror = Mirror(settings["source"], settings["target"], settings["topics"],
                    rename=settings["rename"],
                    replication_factor=int(settings["replication_factor"]),
                    checkpoint_interval_s=duration_ms(settings["checkpoint_interval"]) / 1000,
                    metrics=metrics,
                    source_security=cluster_security(settings["source_config"], "source"),
                    target_security=cluster_security(settings["target_config"], "target"))
    mirror.run(stop)
    logger.info("stopped")
    return 0


def _progress(late) -> None:
    """One stderr line per wait step while the target is behind the group."""
    print("waiting for the mirror: " + "; ".join(late),
          file=sys.stderr, flush=True)


def run_translate(args) -> int:
    from .mirror.translate import translate_group

    if args.to_datetime is not None:
        return _run_translate_by_time(args)
    if args.topic:
        raise UsageError("--topic goes with --to-datetime (by offsets, the group's committed "
                         "topics are moved)")

    result = translate_group(args.group, args.source, args.target, rename=args.rename,
                             max_latency_ms=duration_ms(args.max_latency), execute=args.execute,
                             source_security=cluster_security(args.source_config, "source"),
                             target_security=cluster_security(args.target_config, "target"),
                             wait_s=duration_ms(args.wait) / 1000, progress=_progress)
    print(f"group {result.group}: committed offsets from the {result.source_used}")
    print("TOPIC\tPARTITION\tSOURCE-OFFSET\tTARGET-TOPIC\tEXACT-OFFSET\tTIME-OFFSET\tRE-READ")
    for row in result.rows:
        print(f"{row.topic}\t{row.partition}\t{row.source_offset}\t{row.target_topic}\t"
              f"{row.target_offset}\t{row.time_offset}\t{row.reread}")
    reread = sum(row.reread for row in result.rows)
    print(f"exact method re-reads 0 records; time method (CreateTime - {args.max_latency}) "
          f"re-reads {plural(reread, 'record')}")
    print("committed the exact offsets on the target" if args.execute
          else "nothing changed (give --execute to commit the exact offsets on the target)")
    return 0


def _run_translate_by_time(args) -> int:
    from .mirror.by_time import translate_by_time
    from .times import format_time_ms, parse_time_ms

    timestamp = parse_time_ms(args.to_datetime)
    result = translate_by_time(args.group, args.source, args.target, timestamp,
                               rename=args.rename, topics=args.topic, execute=args.execute,
                               source_security=cluster_security(args.source_config, "source"),
                               target_security=cluster_security(args.target_config, "target"),
                               wait_s=duration_ms(args.wait) / 1000, progress=_progress)
    print(f"group {result.group}: the first records whose source LogAppendTime is at or after "
          f"{format_time_ms(timestamp)} ({timestamp} ms)")
    print("TARGET-TOPIC\tPARTITION\tOFFSET\tSOURCE-TIME")
    for row in result.rows:
        print(f"{row.target_topic}\t{row.partition}\t{row.target_offset}\t"
              f"{format_time_ms(row.source_lat) if row.source_lat >= 0 else 'log end'}")
    print("committed the offsets on the target" if args.execute
          else "nothing changed (give --execute to commit these offsets on the target)")
    return 0


def main(argv: list[str] | None = None) -> int:
    """``tslog-mirror``: the same as ``tslog mirror``."""
    parser = argparse.ArgumentParser(prog="tslog-mirror", description="copy topics to another "
                                     "cluster, record for record, until SIGTERM")
    parser.add_argument("--version", action="version",
                        version=f"tslog-mirror {installed_version()}",
                        help="print the installed tslog version and exit")
    add_mirror_options(parser)
    args = parser.parse_args(argv)
    try:
        return run_mirror(args)
    except EXPECTED_ERRORS as error:
        print(f"tslog-mirror: error: {error_line(error, _SECURITY_OPTIONS)}", file=sys.stderr)
        return 2 if isinstance(error, UsageError) else 1


if __name__ == "__main__":
    sys.exit(main())
