"""What every ``tslog`` subcommand shares: its error types, the one line an error becomes,
KEY=VALUE options, and counted nouns ("1 partition", "2 partitions")."""

from __future__ import annotations

import asyncio
import importlib.metadata
import logging
import re
import socket
import sys

from .errors import ConnectionLostError, SecurityRequiredError, TslogError
from .times import TimeFormatError

# ``cannot connect to HOST:PORT: <cause>`` is how the client's connection reports a failed
# connect; the address is everything up to the first ": ".
_CANNOT_CONNECT = re.compile(r"^cannot connect to (\S+?): ")
COMMAND_CONFIG_HINT = "--command-config FILE (or $TSLOG_COMMAND_CONFIG=FILE)"


class CommandError(Exception):
    """A user-facing failure: printed as one line, exit status 1."""


class UsageError(CommandError):
    """A bad command line found after parsing (a malformed value): one line, exit status 2."""


def plural(count: int, noun: str) -> str:
    """``plural(1, "record")`` is "1 record", ``plural(2, "record")`` is "2 records"."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def key_values(items: list[str], option: str) -> dict[str, str]:
    """``["a=1", "b=x=y"]`` -> {"a": "1", "b": "x=y"}; anything without a key and "=" is a
    usage error naming the option."""
    pairs = {}
    for item in items:
        key, equals, value = item.partition("=")
        if not equals or not key:
            raise UsageError(f"{option} takes KEY=VALUE, not {item!r}")
        pairs[key] = value
    return pairs


def error_line(error: BaseException, security_option: str = COMMAND_CONFIG_HINT) -> str:
    """The one line ``tslog: error: ...`` shows for ``error``: no exception reprs.

    ``security_option``: where this program takes a connection's security, named when a
    broker wants TLS or a login (the client's own message speaks Python, not flags)."""
    if isinstance(error, SecurityRequiredError):
        return (f"{error.address} closed the connection before answering: its listener may "
                f"speak TLS or require a SASL login; give the connection's security in a "
                f"properties file with {security_option} (security.protocol=SSL, "
                "SASL_PLAINTEXT or SASL_SSL, ssl.ca.location=..., sasl.username=...; the "
                "password in the file or $TSLOG_SASL_PASSWORD, never on the command line; "
                "docs/security.md)")
    if isinstance(error, ConnectionLostError):
        match = _CANNOT_CONNECT.match(str(error))
        if match:
            return f"cannot connect to {match.group(1)}: {_connect_failure(error)}"
    return str(error) or type(error).__name__


def _connect_failure(error: BaseException) -> str:
    cause = error.__cause__
    if isinstance(cause, ConnectionRefusedError):
        return "connection refused (is tslog-broker running?)"
    if isinstance(cause, (asyncio.TimeoutError, TimeoutError)):
        return "timed out (is the address right, and the port open?)"
    if isinstance(cause, socket.gaierror):
        return f"unknown host ({cause.strerror})"
    if isinstance(cause, OSError) and cause.strerror:
        return cause.strerror[0].lower() + cause.strerror[1:]
    return str(cause) if cause is not None else "no answer"


def installed_version() -> str:
    """The installed distribution's version, for every entry point's ``--version``."""
    try:
        return importlib.metadata.version("tslog")
    except importlib.metadata.PackageNotFoundError:
        return "unknown (not installed)"


def show_reachability() -> None:
    """Print the client's "broker unreachable" / "reachable again" warnings on stderr: a
    command that keeps reading (a tailing ``consume``) must not sit silent while its broker
    is gone. Other commands fail with one error line instead."""
    logger = logging.getLogger("tslog.client.reachability")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("tslog: warning: %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.WARNING)
    logger.propagate = False


# What a subcommand may raise for ``main`` to print as one line (anything else is a bug and
# keeps its traceback).
EXPECTED_ERRORS = (CommandError, TslogError, TimeFormatError, OSError, ValueError)

__all__ = ["CommandError", "UsageError", "EXPECTED_ERRORS", "error_line", "installed_version",
           "key_values", "plural",
           "show_reachability"]
