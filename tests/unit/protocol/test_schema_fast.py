"""The compiled fast path of schema checks accepts exactly what it may.

Goal: requests and responses are checked by a compiled function first (several times
cheaper) and node by node only when it says no; a body it wrongly accepted would reach a
handler unchecked, and a valid body it refused would only cost time. Method: hypothesis
bodies valid for every API (must be accepted by the fast path) and the same bodies with one
value anywhere replaced by junk (whatever the fast path accepts, the node-by-node check
must accept too).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tslog.protocol.schema import compile_accepts
from tslog.protocol.messages import REQUEST_SCHEMAS, RESPONSE_SCHEMAS
from tslog.protocol.schema import SchemaError

from .test_messages import strategy_for

SCHEMAS = sorted((("request", k), s) for k, s in REQUEST_SCHEMAS.items()) + sorted(
    (("response", k), s) for k, s in RESPONSE_SCHEMAS.items())

JUNK = (st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.text(max_size=5)
        | st.binary(max_size=5) | st.lists(st.integers(), max_size=2)
        | st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))


@st.composite
def schema_and_body(draw):
    name, schema = draw(st.sampled_from(SCHEMAS))
    return schema, draw(strategy_for(schema))


def mutate(value, data):
    """A copy of ``value`` with one nested value replaced, removed or added."""
    containers = isinstance(value, (dict, list)) and value
    if not containers or data.draw(st.integers(0, 3)) == 0:
        return data.draw(JUNK)
    if isinstance(value, list):
        index = data.draw(st.integers(0, len(value) - 1))
        return value[:index] + [mutate(value[index], data)] + value[index + 1:]
    key = data.draw(st.sampled_from(sorted(value)))
    out = dict(value)
    action = data.draw(st.integers(0, 4))
    if action == 0:
        del out[key]
    elif action == 1:
        out[data.draw(st.text(max_size=4))] = data.draw(JUNK)
    else:
        out[key] = mutate(value[key], data)
    return out


def checks_slowly(schema, value) -> bool:
    try:
        schema._check_slowly(value)
        return True
    except SchemaError:
        return False


def test_every_api_schema_compiles():
    assert all(compile_accepts(schema) is not None for _, schema in SCHEMAS)


@settings(max_examples=300, deadline=None)
@given(schema_and_body(), st.data())
def test_valid_bodies_are_accepted_and_accepted_bodies_are_valid(case, data):
    schema, body = case
    accepts = compile_accepts(schema)
    assert accepts(body) and checks_slowly(schema, body)
    for _ in range(5):
        mutated = mutate(body, data)
        if accepts(mutated):
            assert checks_slowly(schema, mutated), mutated
        schema_raised = not checks_slowly(schema, mutated)
        try:
            schema.check(mutated)
            assert not schema_raised
        except SchemaError:
            assert schema_raised
