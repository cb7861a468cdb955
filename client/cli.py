"""``tslog``: the command line for topics, producing lines and replaying a time range.

    tslog topics create|list|describe|alter-config|add-partitions|delete ...
    tslog produce TOPIC                       # one record per stdin line
    tslog consume TOPIC --from-time -1h [--to-time now] [--format json]
    tslog consume TOPIC --group G             # share the partitions, resume where G committed
    tslog offsets TOPIC --time 2026-11-21T10:00:00Z
    tslog groups list|describe|reset-offsets|delete ...   # see cli_groups.py
    tslog partitions reassign|reassignments ...           # see cli_reassign.py
    tslog brokers list|decommission N                     # see cli_brokers.py
    tslog acls add|remove|list ...            # see cli_acls.py
    tslog users create|delete|list ...                    # see cli_users.py
    tslog mirror --source A --target B --topics REGEX     # see cli_mirror.py
    tslog console [--listen 127.0.0.1:8080] [--allow-writes]  # see console/command.py

Every subcommand takes ``--bootstrap`` before or after its name (default ``$TSLOG_BOOTSTRAP``
or 127.0.0.1:9092), and ``--command-config FILE`` for TLS/SASL (``cli_security``). Errors
print one line on stderr and exit 1 (2 for a bad command line).
This module parses and dispatches; each subcommand lives in its own ``cli_*`` module.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

from . import (
    cli_brokers,
    cli_consume,
    cli_mirror,
    cli_offsets,
    cli_produce,
    cli_reassign,
    cli_topics,
)
from .cli_common import EXPECTED_ERRORS, UsageError, error_line, installed_version
from .cli_groups import TIME_OPTIONS as _GROUP_TIME_OPTIONS, add_groups_commands
from .cli_acls import add_acls_commands
from .cli_users import add_users_commands
from .console.command import register as add_console_command
from .cli_security import add_security_options, security_from

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"


_TIME_OPTIONS = ("--from-time", "--to-time", "--time", "--timestamp",
                 "--before-time") + _GROUP_TIME_OPTIONS


def _attach_time_values(argv: list[str]) -> list[str]:
    """Turn ``--from-time -1h`` into ``--from-time=-1h``: argparse would read a relative time
    as an unknown option, and ``-15m`` is the form people type most."""
    joined: list[str] = []
    items = iter(argv)
    for item in items:
        if item in _TIME_OPTIONS:
            value = next(items, None)
            joined.append(item if value is None else f"{item}={value}")
        else:
            joined.append(item)
    return joined


def main(argv: list[str] | None = None) -> int:
    parser = _build_parser()
    args = parser.parse_args(_attach_time_values(sys.argv[1:] if argv is None else argv))
    if not getattr(args, "handler", None):
        parser.print_help(sys.stderr)
        return 2
    problem = getattr(args, "check", lambda _: None)(args)  # what argparse cannot express
    if problem:
        parser.error(problem)  # exits 2, as any bad command line
    # The client's warnings (a retried batch, a new producer id) are for programs that keep
    # running; a command reports its outcome in its own one line.
    logging.getLogger("tslog").setLevel(logging.ERROR)
    try:
        args.security = security_from(args, os.environ)  # --command-config
        return args.handler(args) or 0
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # e.g. `tslog consume ... | head`
        sys.stderr.close()
        return 0
    except EXPECTED_ERRORS as error:
        print(f"tslog: error: {error_line(error)}", file=sys.stderr)
        return 2 if isinstance(error, UsageError) else 1


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tslog", description=_DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"tslog {installed_version()}",
                        help="print the installed tslog version and exit")
    parser.add_argument("--bootstrap", default=os.environ.get("TSLOG_BOOTSTRAP", DEFAULT_BOOTSTRAP),
                        metavar="HOST:PORT", help=_BOOTSTRAP_HELP)
    # Subcommands take --bootstrap too; SUPPRESS keeps one given before the subcommand
    # from being overwritten by the subcommand's default.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--bootstrap", default=argparse.SUPPRESS, metavar="HOST:PORT",
                        help=_BOOTSTRAP_HELP)
    add_security_options(parser, common)
    commands = parser.add_subparsers(metavar="COMMAND")
    cli_topics.register(commands, common)
    cli_produce.register(commands, common)

    cli_consume.register(commands, common)
    cli_offsets.register(commands, common)
    cli_reassign.register(commands, common)
    cli_brokers.register(commands, common)
    add_groups_commands(commands, common)
    add_acls_commands(commands, common)
    add_users_commands(commands, common)
    cli_mirror.register(commands, common)
    add_console_command(commands, common)
    return parser


_DESCRIPTION = "the command line for topics, producing lines and replaying a time range"
_BOOTSTRAP_HELP = (f"broker address host:port[,host:port] "
                   f"(default: $TSLOG_BOOTSTRAP or {DEFAULT_BOOTSTRAP})")


if __name__ == "__main__":
    sys.exit(main())
