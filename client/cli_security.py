"""How every ``tslog`` subcommand reaches a secured cluster: ``--command-config FILE``.

The file is Kafka's ``--command-config`` properties file (``security.protocol=SASL_SSL``,
``ssl.ca.location=...``, ``sasl.username=...``), read by ``Security.from_file``, so a file
written for Kafka's tools works here. ``$TSLOG_COMMAND_CONFIG`` names it when the flag is not
given. The password never comes from the command line (a shell history, ``ps``): it is the
file's ``sasl.password`` or ``sasl.password.file``, else ``$TSLOG_SASL_PASSWORD``.
"""

from __future__ import annotations

import argparse
from typing import Mapping

from .security import Security

_HELP = ("Kafka-style properties file of the connection's security (security.protocol, "
         "ssl.ca.location, sasl.username ...; default $TSLOG_COMMAND_CONFIG); the SASL "
         "password is the file's sasl.password(.file) or $TSLOG_SASL_PASSWORD")


def add_security_options(parser: argparse.ArgumentParser,
                         common: argparse.ArgumentParser) -> None:
    """``--command-config`` before or after the subcommand, as ``--bootstrap``."""
    parser.add_argument("--command-config", dest="command_config", default=None,
                        metavar="FILE", help=_HELP)
    common.add_argument("--command-config", dest="command_config",
                        default=argparse.SUPPRESS, metavar="FILE", help=_HELP)


def security_from(args: argparse.Namespace, environ: Mapping[str, str]) -> Security | None:
    """The ``Security`` the command connects with, None for plain TCP (no file named).

    Raises:
        SecurityConfigError: the file cannot be read or its settings do not work together.
    """
    path = getattr(args, "command_config", None) or environ.get("TSLOG_COMMAND_CONFIG")
    if not path:
        return None
    return Security.from_file(path, password=environ.get("TSLOG_SASL_PASSWORD"))
