"""Wire error codes map to exception classes the client's retry logic can trust."""

import pytest

from tslog.client import errors
from tslog.protocol.errors import ErrorCode


@pytest.mark.parametrize("code", [c for c in ErrorCode if c is not ErrorCode.NONE])
def test_every_code_has_its_own_class_with_the_codes_flags(code):
    cls = errors.error_for(code)
    assert issubclass(cls, errors.TslogError)
    assert cls.error_code is code and cls.retriable is code.retriable
    assert str(cls()) == code.message
    assert getattr(errors, cls.__name__) is cls and cls.__name__.endswith("Error")


def test_unknown_codes_become_unknown_server_error():
    assert errors.error_for(31337) is errors.UnknownServerError
    assert not errors.UnknownServerError.retriable


def test_named_classes_the_client_relies_on():
    assert errors.ConnectionLostError.retriable
    assert errors.ConnectionLostError.invalid_metadata  # reconnect may land on a new leader
    assert errors.RequestTimedOutError.retriable
    assert errors.NotLeaderOrFollowerError.invalid_metadata
    assert errors.error_for(ErrorCode.TOPIC_ALREADY_EXISTS) is errors.TopicAlreadyExistsError
    assert not errors.TopicAlreadyExistsError.retriable


def test_raise_for():
    errors.raise_for(0)
    with pytest.raises(errors.OffsetOutOfRangeError, match="at 7"):
        errors.raise_for(1, "at 7")
