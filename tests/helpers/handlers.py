"""Calling request handlers directly, as the connection does, for handler unit tests."""

from __future__ import annotations

import inspect

from tslog.protocol.messages import REQUEST_SCHEMAS, RESPONSE_SCHEMAS, ApiKey
from tslog.protocol.packed import PackedAnswer


async def call(broker, api_key: ApiKey, body: dict):
    """Run a handler the way the connection does, through the broker's dispatch table (each
    handler bound to its services at open); check both bodies against the schemas."""
    REQUEST_SCHEMAS[api_key, 0].check(body)
    result = broker.dispatch[api_key](body)
    if inspect.isawaitable(result):
        result = await result
    if result is not None:  # a PackedAnswer (Metadata's) is checked as the dict it is
        RESPONSE_SCHEMAS[api_key, 0].check(dict(result) if type(result) is PackedAnswer
                                           else result)
    return result
