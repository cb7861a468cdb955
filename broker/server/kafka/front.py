"""The Kafka listener's side of a connection: what the shared shell
(``server/connection.BrokerConnection``) asks of a protocol (``server/native_front.py`` says
what a front is), for Kafka clients.

The codec is Kafka's (``protocol/kafka/server_codec.py``, with the versions ``dispatch.py``
advertises); a request goes to its adapter (``dispatch.TABLE``) with the connection's
``KafkaServices`` (the typed services behind the same authorizer gate) and a
``KafkaRequestInfo``. The login is the native listener's SCRAM session as it is: SaslHandshake
v1 and SaslAuthenticate carry the same fields in Kafka's protocol as in tslog's; until it
succeeds only ApiVersions, SaslHandshake and SaslAuthenticate are served, anything else closes
the connection. Kafka has no generic error answer, so an adapter's bug closes the connection
(logged with its traceback on the broker only), and a connection over a limit is closed
unanswered, as Kafka's own broker does; a SCRAM login over ``max_connections_per_principal``
gets SaslAuthenticate's typed error.
"""

from __future__ import annotations

import logging

from tslog.protocol.errors import ErrorCode
from tslog.protocol.kafka.codec import API_VERSIONS
from tslog.protocol.kafka.errors import UnsupportedKafkaVersion
from tslog.protocol.kafka.server_codec import KafkaCodec
from tslog.protocol.messages import ApiKey

from ...metrics.definitions import REFUSED, kafka_api_metrics
from ...metrics.observe import finish_kafka_request
from ..connection import CLOSE
from .dispatch import ADVERTISED, TABLE, api_versions_body
from .request_info import KafkaRequestInfo

log = logging.getLogger("tslog.broker.kafka")

_SASL_KEYS = frozenset({int(ApiKey.SASL_HANDSHAKE), int(ApiKey.SASL_AUTHENTICATE)})
_SASL_AUTHENTICATE = int(ApiKey.SASL_AUTHENTICATE)


class KafkaFront:
    """Args:
        make_services: ``make_services(connection)`` -> the ``KafkaServices`` adapters get
            (its typed services judged for this connection's principal).
    """

    chunked_api = None  # every Kafka answer is encoded in chunks (the codec's own)
    failure_answer = None  # no generic error shape: close
    answers_refusals = False  # over a connection limit: closed unanswered
    # One Fetch at a time whose answer is still being built (a long poll, a large conversion
    # off the loop): it holds records not yet counted in the unsent bytes, so a pipelining
    # client could otherwise have many built at once. Kafka's broker goes further and takes a
    # connection's requests one at a time; acks=all produces here still run side by side, so
    # their fsyncs are shared (group commit).
    bounded_api, max_bounded = int(ApiKey.FETCH), 1
    finish = staticmethod(finish_kafka_request)

    def __init__(self, make_services, table=TABLE, advertised=ADVERTISED) -> None:
        self.make_services = make_services
        self.table = table
        self.codec = KafkaCodec(advertised, api_versions_body(int(ErrorCode.UNSUPPORTED_VERSION)))

    def bind(self, connection):
        """``call(header, body)`` for one connection (its services made once)."""
        services = self.make_services(connection)
        table, sasl = self.table, connection.sasl

        def call(request, body):
            key = request.api_key
            if key in _SASL_KEYS or (not connection.authenticated and key != API_VERSIONS):
                result = sasl.handle(ApiKey(key), body)  # logs a refusal
                return CLOSE if result is None else result
            info = KafkaRequestInfo(request.client_id, connection.host, connection.principal)
            return table[key](services, body, request.api_version, info)

        return call

    @staticmethod
    def metrics(request, body):
        return kafka_api_metrics(request.api_key, request.api_name)

    @staticmethod
    def refused(peer: str, exc: UnsupportedKafkaVersion) -> None:
        """Answered UNSUPPORTED_VERSION by the codec; counted as the native listener counts
        its refusals."""
        REFUSED["unsupported_version"].inc()
        log.info("%s: Kafka api key %d version %d is not served: UNSUPPORTED_VERSION",
                 peer, exc.api_key, exc.api_version)

    @staticmethod
    def refusal_response(refusal, api_key: int) -> dict | None:
        """SaslAuthenticate's answer when the registry refused the logged-in principal."""
        if api_key != _SASL_AUTHENTICATE:
            return None
        return {"error_code": int(refusal.code), "error_message": refusal.message,
                "auth_bytes": b"", "session_lifetime_ms": 0}
