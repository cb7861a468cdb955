"""Counting failed logins and denied requests, with label sets an attacker cannot grow.

Why bounded: a label value is a time series kept for the process's life. A failed login's
claimed user name is chosen by whoever tries, so it is never a label; its labels are the
mechanism (one of the enabled ones, or "none" before a handshake) and a reason from
``LOGIN_FAILURES``. A denied request is counted per principal and API: principals are
authenticated (a SCRAM user the operator created, a certificate the CA signed), and still only
the first ``MAX_PRINCIPAL_LABELS`` get a series of their own, later ones share "other"; the
API is one of ``ApiKey``'s names, or a Kafka-only API's (``describe_log_dirs``).
"""

from __future__ import annotations

import re

from tslog.protocol.kafka.codec import API_NAMES as KAFKA_API_NAMES
from tslog.protocol.messages import ApiKey

from .definitions import DENIED_REQUESTS, FAILED_LOGINS

MAX_PRINCIPAL_LABELS = 100
LOGIN_FAILURES = frozenset({
    "bad_credentials",  # unknown user or wrong password (told apart only in the log)
    "malformed",  # a SCRAM message that does not parse
    "too_large",  # a SCRAM message over the size a real client sends
    "timeout",  # not logged in within sasl_authentication_timeout_ms
    "request_before_login",  # another API before the login succeeded
})
_principals: set[str] = set()


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def failed_login(mechanism: str | None, reason: str) -> None:
    """Count one failed login (``reason`` from ``LOGIN_FAILURES``)."""
    FAILED_LOGINS.labels(mechanism or "none", reason).inc()


def denied(principal: str, api_key: int) -> None:
    """Count one request the authorizer denied (in whole or in part)."""
    if principal not in _principals:
        if len(_principals) >= MAX_PRINCIPAL_LABELS:
            principal = "other"
        else:
            _principals.add(principal)
    try:
        api = ApiKey(api_key).name.lower()
    except ValueError:  # a Kafka port's own API (DescribeLogDirs: describe_log_dirs)
        kafka_name = KAFKA_API_NAMES.get(api_key)
        api = "unknown" if kafka_name is None else _snake(kafka_name)
    DENIED_REQUESTS.labels(principal, api).inc()
