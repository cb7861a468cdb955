"""``tslog users``: SCRAM users from the command line (kafka-configs' --alter/--describe of
SCRAM credentials, as verbs).

    tslog users create NAME [--mechanism SCRAM-SHA-512] [--iterations 8192] [--password-stdin]
    tslog users delete NAME [--mechanism M]
    tslog users list

``create`` also rotates a password: it replaces the user's credential of that mechanism.
The password never goes on the command line (it would sit in the shell history and in
``ps``): it is typed at a prompt, twice, on a terminal; read from the first line of stdin with
``--password-stdin`` (``printf '%s\\n' "$PW" | tslog users create app --password-stdin``);
or taken from the ``TSLOG_USER_PASSWORD`` environment variable. The client salts and hashes
it (``Admin.create_user``); only that reaches the broker.
"""

from __future__ import annotations

import getpass
import os
import sys

from . import Admin
from .cli_common import CommandError, UsageError

PASSWORD_ENV = "TSLOG_USER_PASSWORD"
MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")


def add_users_commands(commands, common) -> None:
    """Add ``tslog users ...`` to the ``tslog`` parser's subcommands."""
    users = commands.add_parser("users", help="create (or change the password of), delete, "
                                              "list SCRAM users")
    actions = users.add_subparsers(metavar="ACTION")
    create = actions.add_parser("create", parents=[common],
                                help="create a user, or give an existing one a new password")
    create.add_argument("name", help="the user's name (its principal is User:NAME)")
    create.add_argument("--mechanism", choices=MECHANISMS, default="SCRAM-SHA-512",
                        help="the SCRAM mechanism of this credential (default: %(default)s)")
    create.add_argument("--iterations", type=int, default=8192,
                        help="PBKDF2 iterations, 4096 to 16384 (default: %(default)s)")
    create.add_argument("--password-stdin", action="store_true",
                        help="read the password from the first line of stdin (otherwise "
                             f"${PASSWORD_ENV}, or a prompt on a terminal)")
    create.set_defaults(handler=_create)

    delete = actions.add_parser("delete", parents=[common],
                                help="delete a user's credentials (new logins fail)")
    delete.add_argument("name", help="the user's name")
    delete.add_argument("--mechanism", choices=MECHANISMS, default=None,
                        help="only this mechanism's credential (default: every one)")
    delete.set_defaults(handler=_delete)

    listing = actions.add_parser("list", parents=[common],
                                 help="list users and their mechanisms (never secrets)")
    listing.set_defaults(handler=_list)


def read_password(from_stdin: bool) -> str:
    """The new password: stdin's first line, ``$TSLOG_USER_PASSWORD``, or a prompt (twice,
    and both must match) on a terminal. Raises UsageError if there is none."""
    if from_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    elif os.environ.get(PASSWORD_ENV):
        password = os.environ[PASSWORD_ENV]
    elif sys.stdin.isatty():
        password = getpass.getpass("Password: ")
        if getpass.getpass("Password (again): ") != password:
            raise CommandError("the two passwords differ; nothing changed")
    else:
        raise UsageError(f"no password: pipe it with --password-stdin, set {PASSWORD_ENV}, "
                         "or run on a terminal to be asked")
    if not password:
        raise UsageError("the password is empty")
    return password


def _create(args) -> None:
    password = read_password(args.password_stdin)
    with Admin(args.bootstrap, security=args.security) as admin:
        admin.create_user(args.name, password, args.mechanism, args.iterations)
    print(f"stored {args.mechanism} credential of user {args.name}")


def _delete(args) -> None:
    with Admin(args.bootstrap, security=args.security) as admin:
        admin.delete_user(args.name, args.mechanism)
    print(f"deleted user {args.name}" + (f" ({args.mechanism})" if args.mechanism else ""))


def _list(args) -> None:
    with Admin(args.bootstrap, security=args.security) as admin:
        for name, credentials in admin.describe_users().items():
            mechanisms = ", ".join(f"{c.mechanism} ({c.iterations} iterations)"
                                   for c in credentials)
            print(f"{name}\t{mechanisms}")
