"""The console's web application: routes, the login gate, and the cluster clients it owns.

Starlette (an ASGI toolkit) serves it under uvicorn. The app holds one ``AsyncAdmin`` for its whole
life, opened at start-up and closed at shutdown, so a page costs the requests it makes and no
connection set-up. Errors from the cluster (an unknown
topic, a bad time) become a page with one line of explanation, status 400 or 502; the line
is the client's error text, which never holds a secret (``Security`` keeps passwords out of
messages).
"""

from __future__ import annotations

import contextlib
import secrets
from dataclasses import dataclass, field

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Route

from tslog.client.aio import AsyncAdmin
from tslog.client.errors import TslogError
from tslog.client.times import TimeFormatError

from . import views_cluster, views_groups, views_records
from .auth import Authenticator
from .html import error_box, page
from .traffic import WindowError


@dataclass
class Options:
    """What ``tslog console`` was started with (see ``command.py``)."""

    bootstrap: str
    security: object = None  # tslog.client.Security or None
    allow_writes: bool = False
    metrics_urls: dict = field(default_factory=dict)  # node id -> URL
    authenticator: Authenticator | None = None


@dataclass
class Console:
    """The app's state: the options and the cluster clients every view uses."""

    options: Options
    admin: AsyncAdmin
    form_key: bytes  # signs the reset confirmation form (views_groups)


_USER_ERRORS = (TimeFormatError, WindowError, ValueError)  # bad input: 400, one line


def build_app(options: Options) -> Starlette:
    @contextlib.asynccontextmanager
    async def lifespan(app):
        admin = AsyncAdmin(options.bootstrap, security=options.security,
                           client_id="tslog-console")
        # no admin.start(): every page asks for fresh metadata anyway, and a cluster that
        # is down for a moment must not stop the console (``command.run`` checked at start)
        app.state.console = Console(options, admin, secrets.token_bytes(32))
        try:
            yield
        finally:
            await admin.close()

    routes = [Route(path, _guarded(view), methods=methods)
              for path, view, methods in _ROUTES]
    return Starlette(routes=routes, lifespan=lifespan)


_ROUTES = [
    ("/", views_cluster.cluster_page, ["GET"]),
    ("/topics", views_cluster.topics_page, ["GET"]),
    ("/topics/{topic}", views_cluster.topic_page, ["GET"]),
    ("/find", views_records.find_page, ["GET"]),
    ("/groups", views_groups.groups_page, ["GET"]),
    ("/groups/{group}", views_groups.group_page, ["GET"]),
    ("/groups/{group}/reset", views_groups.reset_confirm_page, ["GET"]),
    ("/groups/{group}/reset", views_groups.reset_apply, ["POST"]),
]


def _guarded(view):
    """Wrap a view: the login gate first, then the view, then its errors as a short page."""
    async def endpoint(request: Request) -> Response:
        console: Console = request.app.state.console
        authenticator = console.options.authenticator
        if authenticator is not None and authenticator.user(
                request.headers.get("authorization")) is None:
            return PlainTextResponse("authentication required\n", status_code=401,
                                     headers={"WWW-Authenticate": 'Basic realm="tslog console"'})
        try:
            return await view(request, console)
        except _USER_ERRORS as exc:
            return _error_page(str(exc), 400, console)
        except TslogError as exc:
            return _error_page(f"the cluster said: {exc}", 502, console)
    endpoint.__name__ = view.__name__
    return endpoint


def _error_page(message: str, status: int, console: Console) -> HTMLResponse:
    return HTMLResponse(page("Cannot show this", error_box(message),
                             read_only=not console.options.allow_writes), status_code=status)
