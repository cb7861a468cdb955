"""Error codes are a wire contract: numbers frozen, Kafka's where Kafka has the error."""

import pytest

from tslog.protocol import ErrorCode, LocalProtocolError, ProtocolError, RemoteProtocolError

# Frozen: changing a number here breaks every client already deployed.
FROZEN_NUMBERS = {
    "UNKNOWN_SERVER_ERROR": -1,
    "NONE": 0,
    "OFFSET_OUT_OF_RANGE": 1,
    "CORRUPT_MESSAGE": 2,
    "UNKNOWN_TOPIC_OR_PARTITION": 3,
    "INVALID_FETCH_SIZE": 4,
    "LEADER_NOT_AVAILABLE": 5,
    "NOT_LEADER_OR_FOLLOWER": 6,
    "REQUEST_TIMED_OUT": 7,
    "COORDINATOR_NOT_AVAILABLE": 15,
    "NOT_COORDINATOR": 16,
    "UNKNOWN_MEMBER_ID": 25,
    "ILLEGAL_GENERATION": 22,
    "INCONSISTENT_GROUP_PROTOCOL": 23,
    "INVALID_SESSION_TIMEOUT": 26,
    "REBALANCE_IN_PROGRESS": 27,
    "MEMBER_ID_REQUIRED": 79,
    "MESSAGE_TOO_LARGE": 10,
    "INVALID_TOPIC_EXCEPTION": 17,
    "RECORD_LIST_TOO_LARGE": 18,
    "NOT_ENOUGH_REPLICAS": 19,
    "NOT_ENOUGH_REPLICAS_AFTER_APPEND": 20,
    "INVALID_REQUIRED_ACKS": 21,
    "INVALID_TIMESTAMP": 32,
    "UNSUPPORTED_VERSION": 35,
    "TOPIC_ALREADY_EXISTS": 36,
    "INVALID_PARTITIONS": 37,
    "INVALID_REPLICATION_FACTOR": 38,
    "INVALID_CONFIG": 40,
    "INVALID_REQUEST": 42,
    "UNSUPPORTED_FOR_MESSAGE_FORMAT": 43,
    "POLICY_VIOLATION": 44,
    "OUT_OF_ORDER_SEQUENCE_NUMBER": 45,
    "DUPLICATE_SEQUENCE_NUMBER": 46,
    "KAFKA_STORAGE_ERROR": 56,
    "NON_EMPTY_GROUP": 68,
    "GROUP_ID_NOT_FOUND": 69,
    "GROUP_MAX_SIZE_REACHED": 81,
    "FENCED_LEADER_EPOCH": 74,
    "UNKNOWN_LEADER_EPOCH": 75,
    "INVALID_RECORD": 87,
    "FENCED_MEMBER_EPOCH": 110,
    "STALE_MEMBER_EPOCH": 113,
    "UNKNOWN_API_KEY": 1000,
    "TOO_MANY_CONNECTIONS": 1001,
}


@pytest.mark.parametrize("name, number", sorted(FROZEN_NUMBERS.items()))
def test_numbers_are_frozen(name, number):
    assert ErrorCode[name] == number
    assert ErrorCode(number) is ErrorCode[name]


def test_every_code_has_a_distinct_number_a_message_and_a_retriable_flag():
    members = list(ErrorCode.__members__.values())
    assert len({int(code) for code in members}) == len(members)  # no silent aliases
    for code in ErrorCode:
        assert isinstance(code.retriable, bool)
        assert isinstance(code.message, str) and code.message


def test_retriable_matches_what_a_client_should_do():
    for transient in ("NOT_LEADER_OR_FOLLOWER", "LEADER_NOT_AVAILABLE", "REQUEST_TIMED_OUT",
                      "NOT_ENOUGH_REPLICAS", "UNKNOWN_TOPIC_OR_PARTITION", "KAFKA_STORAGE_ERROR"):
        assert ErrorCode[transient].retriable, transient
    for permanent in ("NONE", "UNKNOWN_SERVER_ERROR", "OFFSET_OUT_OF_RANGE", "MESSAGE_TOO_LARGE",
                      "INVALID_TIMESTAMP", "TOPIC_ALREADY_EXISTS", "INVALID_REQUEST",
                      "TOO_MANY_CONNECTIONS"):
        assert not ErrorCode[permanent].retriable, permanent


def test_codes_travel_as_plain_ints():
    assert int(ErrorCode.INVALID_TIMESTAMP) == 32
    assert ErrorCode.NOT_LEADER_OR_FOLLOWER == 6


def test_unknown_numbers_from_a_newer_broker_read_as_unknown_server_error():
    assert ErrorCode.from_wire(3) is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert ErrorCode.from_wire(31999) is ErrorCode.UNKNOWN_SERVER_ERROR
    with pytest.raises(ValueError):
        ErrorCode(31999)


def test_protocol_error_is_abstract():
    with pytest.raises(TypeError):
        ProtocolError("bad")


def test_protocol_errors_carry_a_reply_hint():
    remote = RemoteProtocolError("garbage")
    assert remote.error_code is ErrorCode.INVALID_REQUEST
    assert isinstance(remote, ProtocolError)
    local = LocalProtocolError("misuse", ErrorCode.MESSAGE_TOO_LARGE)
    assert local.error_code is ErrorCode.MESSAGE_TOO_LARGE
    assert str(local) == "misuse"
    assert not isinstance(local, RemoteProtocolError)
