"""HTTP Basic credentials (RFC 7617) from an ``Authorization`` header: sans-I/O, shared by the
two HTTP endpoints tslog serves, the broker's /metrics and the web console.

Why here: the broker and the client may both import ``protocol`` and not each other, and the
two endpoints must read the header by the same rules (the scheme in any case, base64 checked
strictly, UTF-8, a colon required) so an operator's scraper or browser works with both.
"""

from __future__ import annotations

import base64
import binascii


def basic_credentials(header: str | None) -> tuple[str, str] | None:
    """(user, password) from ``Basic <base64 of user:password>``, or None when the header
    is absent, another scheme, or malformed."""
    scheme, _, encoded = (header or "").partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(encoded.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    user, sep, password = decoded.partition(":")
    return (user, password) if sep else None
