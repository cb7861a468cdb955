"""The native listener's side of a connection (``connection.BrokerConnection`` is the shell both
listeners share; ``kafka/front.py`` is the Kafka listener's side).

A front says what the shell cannot know about a protocol: its codec, which handler serves a
request and who may ask before logging in, the metrics a request counts in, and the answers
the protocol has for a failed handler and for a connection over a limit. Here: tslog's
msgpack codec, the dispatch table (behind the authorizer's gate when one is configured), only
SaslHandshake/SaslAuthenticate before a SCRAM login, UNKNOWN_SERVER_ERROR for a handler's bug
and TOO_MANY_CONNECTIONS, naming the limit, for a connection over one.
"""

from __future__ import annotations

import logging
import math

from tslog.protocol.errors import ErrorCode
from tslog.protocol.messages import (ApiKey, InvalidRequestError, RequestError,
                                     UnknownApiKeyError, error_response_body)
from tslog.protocol.server_codec import NATIVE_CODEC

from ..metrics.definitions import REFUSED, api_metrics
from ..metrics.observe import finish_request
from ..security.request_gate import RequestGate
from ..security.sasl_session import SASL_APIS
from .connection import CLOSE
from .dispatch import Dispatch

log = logging.getLogger("tslog.broker.connection")

_GROUP_HEARTBEAT, _API_VERSIONS = ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.API_VERSIONS


def _refusal_reason(exc: RequestError) -> str:
    return ("unknown_api" if isinstance(exc, UnknownApiKeyError) else "invalid_request"
            if isinstance(exc, InvalidRequestError) else "unsupported_version")


class NativeFront:
    """Args:
        dispatch: every ApiKey's handler, bound to its services once at start
            (``dispatch.bind_handlers``): a request costs one lookup and one call.
        gate: None (authorizer off), or every handler asks it first for the principal.
    """

    codec = NATIVE_CODEC
    chunked_api = ApiKey.FETCH  # a Fetch answer's records go out from their own buffers
    failure_answer = {"error_code": int(ErrorCode.UNKNOWN_SERVER_ERROR)}  # a handler's bug
    answers_refusals = True
    # Slow answers (long polls, acks=all produces) run side by side, up to
    # max_in_flight_requests: each answer counts in the unsent bytes once built.
    bounded_api, max_bounded = None, math.inf
    metrics = staticmethod(api_metrics)
    finish = staticmethod(finish_request)

    def __init__(self, dispatch: Dispatch, gate: RequestGate | None = None) -> None:
        self.dispatch = dispatch
        self.gate = gate

    def bind(self, connection):
        """``call(header, body)`` for one connection: the handler's result, or ``CLOSE``
        for a request before the login (the SASL session logged why)."""
        dispatch = self.dispatch if self.gate is None else self.gate.bind(self.dispatch,
                                                                          connection)
        sasl = connection.sasl

        def call(header, body):
            key = header.api_key
            if connection.authenticated and key not in SASL_APIS:
                if key is _GROUP_HEARTBEAT:  # who the member is, for describe
                    body["client"] = (header.client_id or "", connection.host)
                return dispatch[key](body)
            if key is _API_VERSIONS:  # what a client asks first, logged in or not
                return dispatch[key](body)
            result = sasl.handle(key, body)
            return CLOSE if result is None else result

        return call

    @staticmethod
    def refused(peer: str, exc: RequestError) -> None:
        """A request the codec refused (already answered with its typed error)."""
        REFUSED[_refusal_reason(exc)].inc()
        log.warning("%s: refused request %d: %s", peer, exc.correlation_id, exc)

    @staticmethod
    def refusal_response(refusal, api_key: int) -> dict:
        return error_response_body(api_key, refusal.code, refusal.message)

