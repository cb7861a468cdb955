"""``--producer-property KEY=VALUE`` and ``--consumer-property KEY=VALUE``: Kafka's
console tools' way to set any client setting from the command line (``max.request.size``,
``linger.ms``, ``fetch.max.bytes`` ...), mapped onto the Python client's keyword arguments.

Why a mapping and not a list: Kafka's dotted names are the Python names with dots for
underscores (``max.request.size`` is ``max_request_size``), so the constructor's own
signature says which keys exist and what type each takes; a few names differ and are listed.
Security settings are not taken here (they belong in ``--command-config``'s file, which keeps
passwords off the command line), nor anything that is not a plain value.
"""

from __future__ import annotations

import inspect

from .aio import AsyncConsumer, AsyncProducer
from .cli_common import UsageError, key_values

_KAFKA_NAMES = {"compression.type": "compression",
                "max.in.flight.requests.per.connection": "max_in_flight"}
_NOT_PROPERTIES = {"self", "bootstrap", "topics", "security", "key_serializer",
                   "value_serializer", "key_deserializer", "value_deserializer"}


def client_options(cls: type, items: list[str], option: str) -> dict:
    """``cls``'s keyword arguments from ``--option KEY=VALUE`` items, typed by the
    constructor's defaults.

    Raises:
        UsageError: an unknown key (the known ones are listed) or a value of the wrong type.
    """
    parameters = {name: p for name, p in inspect.signature(cls.__init__).parameters.items()
                  if name not in _NOT_PROPERTIES and p.kind is p.KEYWORD_ONLY}
    options = {}
    for key, text in key_values(items, option).items():
        name = _KAFKA_NAMES.get(key, key.replace(".", "_").replace("-", "_"))
        if name not in parameters:
            known = ", ".join(sorted(n.replace("_", ".") for n in parameters))
            raise UsageError(f"{option} {key}: not a setting of this client; known: {known}")
        if name == "acks":  # Kafka's all, or a number
            options[name] = "all" if text.strip() in ("all", "-1") else _typed(
                text, 1, f"{option} {key}")
        else:
            options[name] = _typed(text, parameters[name].default, f"{option} {key}")
    return options


def producer_options(args) -> dict:
    """``--producer-property`` as the Producer's keyword arguments."""
    return client_options(AsyncProducer, args.producer_property, "--producer-property")


def consumer_options(args) -> dict:
    """``--consumer-property`` as the Consumer's keyword arguments."""
    return client_options(AsyncConsumer, args.consumer_property, "--consumer-property")


def _typed(text: str, default, what: str):
    """``text`` as the default's type: bool, int, float, or as it is (a string, or a setting
    whose default is None, such as ``enable.idempotence``)."""
    word = text.strip().lower()
    if isinstance(default, bool) or (default is None and word in ("true", "false")):
        if word not in ("true", "false"):
            raise UsageError(f"{what}: expected true or false, got {text!r}")
        return word == "true"
    if isinstance(default, (int, float)) or default is None:
        try:
            return type(default)(text) if default is not None else int(text)
        except ValueError:
            if default is None:
                return text
            raise UsageError(f"{what}: expected a number, got {text!r}") from None
    return text
