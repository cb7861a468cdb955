"""``tslog console``: serve the web console (docs/console.md).

    tslog console [--bootstrap HOST:PORT] [--listen 127.0.0.1:8080] [--allow-writes]
                  [--users FILE] [--tls-cert-file F --tls-key-file F] [--metrics NODE=URL]
    tslog console --hash-password NAME < password.txt   # NAME's line for the users file

Like the broker's protected mode, the console refuses to listen beyond loopback without its
own authentication (``--users``): it shows every topic's records to whoever reaches it.
Starlette and uvicorn are imported only when the console starts, so ``tslog``'s other
commands do not pay for them.
"""

from __future__ import annotations

import os
import sys

from .auth import Authenticator, hash_password, is_loopback, load_users

DEFAULT_LISTEN = "127.0.0.1:8080"


class ConsoleStartError(ValueError):
    """The console cannot start as asked; ``tslog`` prints it as one line."""


def register(commands, common) -> None:
    """Add ``tslog console`` to the ``tslog`` parser's subcommands."""
    console = commands.add_parser("console", parents=[common],
                                  help="serve the web console (docs/console.md)")
    console.add_argument("--listen", metavar="HOST:PORT",
                         default=os.environ.get("TSLOG_CONSOLE_LISTEN", DEFAULT_LISTEN),
                         help=f"address to serve on (default $TSLOG_CONSOLE_LISTEN or "
                              f"{DEFAULT_LISTEN}); beyond loopback it needs --users")
    console.add_argument("--allow-writes", action="store_true",
                         help="enable write actions (resetting a group's offsets)")
    console.add_argument("--users", metavar="FILE",
                         help="users file of NAME:pbkdf2_sha256$... lines: asks for a login")
    console.add_argument("--tls-cert-file", metavar="FILE", help="serve HTTPS with this cert")
    console.add_argument("--tls-key-file", metavar="FILE", help="... and this key")
    console.add_argument("--metrics", action="append", default=[], metavar="NODE=URL",
                         help="a broker's metrics endpoint, linked from the cluster page "
                              "(repeat per broker)")
    console.add_argument("--hash-password", metavar="NAME",
                         help="read NAME's password on stdin, print its users-file line, exit")
    console.set_defaults(handler=run)


def _host_port(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise ConsoleStartError(f"--listen {text!r} is not HOST:PORT")
    return host.strip("[]"), int(port)


def _metrics_urls(items: list) -> dict:
    urls = {}
    for item in items:
        node, sep, url = item.partition("=")
        if not sep or not node.isdigit() or not url.startswith(("http://", "https://")):
            raise ConsoleStartError(f"--metrics {item!r} is not NODE=http(s)://HOST:PORT/...")
        urls[int(node)] = url
    return urls


def protected_mode_problem(host: str, users_file: str | None) -> str | None:
    if users_file or is_loopback(host):
        return None
    return (f"refusing to serve on {host} without authentication: anyone who can reach it "
            "could read every topic's records; give --users FILE (a line per user from "
            "`tslog console --hash-password NAME`), or listen on 127.0.0.1")


def _check_cluster(bootstrap: str, security) -> None:
    """Fail at start, in one line, when the cluster cannot be reached or refuses the login:
    a console that starts and then shows only error pages helps nobody find a typo."""
    from tslog.client import Admin

    with Admin(bootstrap, security=security, request_timeout_ms=10_000, retries=1) as admin:
        admin.describe_cluster()


def run(args) -> int:
    if args.hash_password is not None:
        if not args.hash_password or ":" in args.hash_password:
            raise ConsoleStartError("--hash-password takes a user name without ':'")
        password = sys.stdin.readline().rstrip("\n")
        if not password:
            raise ConsoleStartError("give the password on stdin")
        print(f"{args.hash_password}:{hash_password(password)}")
        return 0
    host, port = _host_port(args.listen)
    problem = protected_mode_problem(host, args.users)
    if problem:
        raise ConsoleStartError(problem)
    if bool(args.tls_cert_file) != bool(args.tls_key_file):
        raise ConsoleStartError("give both --tls-cert-file and --tls-key-file, or neither")
    try:
        import uvicorn
        from .app import Options, build_app
        from .collector import tune_for_pages
    except ImportError as exc:  # core dependencies; only a broken install lacks them
        raise ConsoleStartError(f"the console needs {exc.name}: pip install starlette uvicorn")
    _check_cluster(args.bootstrap, args.security)
    options = Options(args.bootstrap, args.security, args.allow_writes,
                      _metrics_urls(args.metrics),
                      Authenticator(load_users(args.users)) if args.users else None)
    scheme = "https" if args.tls_cert_file else "http"
    app = build_app(options)
    tune_for_pages()
    print(f"tslog console: serving {scheme}://{args.listen} for {args.bootstrap} "
          f"({'write actions enabled' if args.allow_writes else 'read-only'})", flush=True)
    uvicorn.run(app, host=host, port=port, log_level="warning",
                access_log=False, ssl_certfile=args.tls_cert_file,
                ssl_keyfile=args.tls_key_file, lifespan="on")
    return 0
