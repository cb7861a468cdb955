"""A tiny blocking raw-socket client built on ``tslog.protocol.messages`` (not the client).

Integration tests of the broker use it so they do not depend on the client package, and so
they can send exactly the bytes they want, garbage included. ``bench/`` measures the broker
through it too (``encode`` ahead of the clock, ``read_body`` without schema checks), so the
benchmarks and the tests speak to the broker through the same code.
"""

from __future__ import annotations

import socket
import struct

from tslog.protocol.frames import FrameReceiver
from tslog.protocol.messages import (
    ApiKey,
    RequestHeader,
    decode_response,
    encode_request,
    split_response,
)
from tslog.protocol.records import build_batch


class Wire:
    """One connection: ``request`` sends and waits for the matching response."""

    def __init__(self, host: str, port: int, timeout_s: float = 10.0,
                 client_id: str = "wire-test", *, ssl_context=None,
                 source: str | None = None) -> None:
        """``ssl_context``: speak TLS (the handshake is done here); ``source``: the local
        address to connect from (another loopback address plays another host)."""
        sock = socket.create_connection((host, port), timeout=timeout_s,
                                        source_address=(source, 0) if source else None)
        if ssl_context is not None:
            try:
                sock = ssl_context.wrap_socket(sock, server_hostname=host)
            except BaseException:
                sock.close()
                raise
        self.sock = sock
        # Small requests go out at once (a pipelined benchmark or a test's partial frame
        # must not wait for Nagle's algorithm).
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.receiver = FrameReceiver(1 << 30)
        self.correlation_id = 0
        self.client_id = client_id

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> "Wire":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def encode(self, api_key: int, body: dict, *, version: int = 0,
               validate: bool = True) -> bytes:
        """The next request's bytes, not sent: a benchmark encodes before its clock starts."""
        self.correlation_id = (self.correlation_id + 1) & 0x7FFFFFFF
        header = RequestHeader(api_key, version, self.correlation_id, self.client_id)
        return encode_request(header, body, validate=validate)

    def send(self, api_key: int, body: dict, *, version: int = 0, validate: bool = True) -> int:
        self.send_raw(self.encode(api_key, body, version=version, validate=validate))
        return self.correlation_id

    def read_frame(self) -> bytes | bytearray | None:
        """The next response frame body, or None if the broker closed the connection.

        The socket receives into the protocol's frame receiver (as every tslog connection
        does): small frames many per read, a large one into a buffer of its own size.
        """
        receiver = self.receiver
        while (frame := receiver.next_frame()) is None:
            count = self.sock.recv_into(receiver.get_buffer())
            if not count:
                return None
            receiver.buffer_updated(count)
        return frame

    def read_body(self) -> dict:
        """The next response's body, unchecked (a benchmark's timed loop; tests ``receive``)."""
        frame = self.read_frame()
        if frame is None:
            raise ConnectionError("broker closed the connection")
        return split_response(frame)[1]

    def receive(self, api_key: int) -> tuple[int, dict]:
        frame = self.read_frame()
        assert frame is not None, "broker closed the connection"
        return decode_response(frame, api_key)

    def request(self, api_key: int, body: dict, **kwargs) -> dict:
        correlation_id = self.send(api_key, body, **kwargs)
        got, response = self.receive(api_key)
        assert got == correlation_id
        return response

    def is_closed_by_peer(self) -> bool:
        """True if the broker closed the connection (EOF or reset) within the timeout."""
        try:
            return self.read_frame() is None
        except (ConnectionResetError, BrokenPipeError):
            return True

    # -- conveniences ----------------------------------------------------------------------

    def api_versions(self) -> dict:
        return self.request(ApiKey.API_VERSIONS, {})

    def create_topic(self, topic: str, partitions: int = 1, configs: dict | None = None,
                     replication_factor: int = 1) -> int:
        response = self.request(ApiKey.CREATE_TOPICS, {"topics": [
            {"topic": topic, "partitions": partitions, "replication_factor": replication_factor,
             "configs": configs or {}}], "timeout_ms": 10_000})
        return response["topics"][0]["error_code"]

    def delete_topic(self, topic: str) -> int:
        response = self.request(ApiKey.DELETE_TOPICS, {"topics": [topic], "timeout_ms": 10_000})
        return response["topics"][0]["error_code"]

    def produce(self, topic: str, partition: int, records: bytes, acks: int = -1) -> dict:
        """Returns the partition's response entry (acks 0: sends and returns {})."""
        body = {"acks": acks, "timeout_ms": 10_000, "topics": [
            {"topic": topic, "partitions": [{"partition": partition, "records": records}]}]}
        if acks == 0:
            self.send(ApiKey.PRODUCE, body)
            return {}
        return self.request(ApiKey.PRODUCE, body)["topics"][0]["partitions"][0]

    def fetch(self, topic: str, partition: int, offset: int, max_wait_ms: int = 0,
              min_bytes: int = 0, max_bytes: int = 1 << 20) -> dict:
        body = {"replica_id": -1, "max_wait_ms": max_wait_ms, "min_bytes": min_bytes,
                "max_bytes": max_bytes, "topics": [{"topic": topic, "partitions": [
                    {"partition": partition, "fetch_offset": offset, "max_bytes": max_bytes}]}]}
        return self.request(ApiKey.FETCH, body)["topics"][0]["partitions"][0]

    def list_offset(self, topic: str, partition: int, timestamp: int,
                    timestamp_type: str = "append") -> dict:
        body = {"replica_id": -1, "timestamp_type": timestamp_type, "topics": [
            {"topic": topic, "partitions": [{"partition": partition, "timestamp": timestamp}]}]}
        return self.request(ApiKey.LIST_OFFSETS, body)["topics"][0]["partitions"][0]

    def log_end_offset(self, topic: str, partition: int = 0) -> int:
        return self.list_offset(topic, partition, -1)["offset"]


def raw_frame(body: bytes) -> bytes:
    """Frame arbitrary bytes (garbage, hand-made msgpack) with a correct length prefix."""
    return struct.pack(">I", len(body)) + body


def batch(values: list[bytes], create_time: int | None = None) -> bytes:
    """A producer-side batch (offsets and LAT unassigned)."""
    if create_time is None:
        return build_batch(values)
    return build_batch(values, create_times=create_time)


def split_values(records: bytes) -> list[tuple[int, bytes]]:
    """(offset, value) of every record in a Fetch response's ``records``."""
    from tslog.protocol.records import iter_records, split_batches
    out = []
    for piece in split_batches(records):
        out.extend((record.offset, record.value) for record in iter_records(bytes(piece)))
    return out
