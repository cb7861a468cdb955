"""Which cluster refused the mirror's login, said in one line.

Why its own error: the mirror retries every failure of either cluster with backoff (a broker
restarts, a network blips), but a refused login does not heal by waiting - a wrong password
or mechanism needs the operator - so it stops the mirror (and ``groups translate``) at once,
and with two clusters in play the line must say which one refused. The password is never
part of it: the client's login errors carry only the broker's message.
"""

from __future__ import annotations

from contextlib import contextmanager

from ..cli_common import error_line
from ..errors import (
    IllegalSaslStateError,
    SaslAuthenticationFailedError,
    TslogError,
    UnsupportedSaslMechanismError,
)

LOGIN_ERRORS = (SaslAuthenticationFailedError, UnsupportedSaslMechanismError,
                IllegalSaslStateError)


class MirrorLoginError(TslogError):
    """The source or target cluster refused the login; not retried."""

    error_code = SaslAuthenticationFailedError.error_code


@contextmanager
def login_of(role: str, bootstrap: str):
    """Turn a refused login inside the block into a ``MirrorLoginError`` naming ``role``
    ("source" or "target") and its address."""
    try:
        yield
    except LOGIN_ERRORS as error:
        raise MirrorLoginError(f"the {role} cluster ({bootstrap}) refused the login: "
                               f"{error_line(error)}") from None
