"""``BrokerSocket`` against a peer that announces more than it may: capped before allocating.

Goal: the blocking connection (Spark reads, the sync consumer's direct lookups) must treat the
4-byte length a peer announces as untrusted, as the broker and the asyncio client do: above
``max_frame_bytes`` it closes the connection and raises ``FrameTooLargeError`` without
allocating the announced size. Method: a tiny real TCP server on 127.0.0.1 plays the peer
(it answers every request with whatever frame the test gives it), and tracemalloc measures
what the receive allocated.
"""

from __future__ import annotations

import socket
import threading
import tracemalloc

import pytest

from tslog.client.blocking import BrokerSocket
from tslog.protocol.frames import FRAME_PREFIX, MAX_FRAME_BYTES, FrameTooLargeError
from tslog.protocol.messages import ApiKey, api_versions_list, encode_response


class FakePeer:
    """Accepts one connection; for each request received, sends ``answer`` and keeps the
    socket open (a peer that announces a huge frame and then dawdles)."""

    def __init__(self, answer: bytes) -> None:
        self.answer = answer
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(10)
        self.port = self.listener.getsockname()[1]
        self.closed_by_client = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        try:
            conn, _ = self.listener.accept()
        except OSError:
            return
        with conn:
            conn.settimeout(10)
            try:
                while conn.recv(65536):  # one request (small: one recv), one answer
                    conn.sendall(self.answer)
            except OSError:
                pass
            self.closed_by_client.set()  # recv gave b"" (or a reset): the client closed

    def close(self) -> None:
        self.listener.close()
        self.thread.join(10)


@pytest.fixture
def peer_factory():
    peers = []

    def make(answer: bytes) -> FakePeer:
        peers.append(FakePeer(answer))
        return peers[-1]

    yield make
    for peer in peers:
        peer.close()


def api_versions_frame(correlation_id: int = 1) -> bytes:
    return encode_response(correlation_id, {"error_code": 0, "api_keys": api_versions_list()},
                           api_key=ApiKey.API_VERSIONS)  # prefix included


@pytest.mark.parametrize("announced", [MAX_FRAME_BYTES + 1, 2**32 - 1])
def test_a_huge_announced_frame_is_refused_without_allocating_it(peer_factory, announced):
    peer = peer_factory(FRAME_PREFIX.pack(announced) + b"\x00" * 100)
    connection = BrokerSocket("127.0.0.1", peer.port, 10.0)
    tracemalloc.start()
    try:
        with pytest.raises(FrameTooLargeError) as caught:
            connection.request(ApiKey.API_VERSIONS, {})
        _, peak_bytes = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert caught.value.length == announced
    assert caught.value.max_frame_bytes == MAX_FRAME_BYTES
    assert f"{announced} bytes" in str(caught.value)
    assert peak_bytes < 1024 * 1024  # the announced size was never allocated
    assert connection.sock.fileno() == -1  # closed: the stream cannot be resynchronised
    assert peer.closed_by_client.wait(10)


def test_the_cap_is_a_setting_and_a_frame_at_it_is_read(peer_factory):
    frame = api_versions_frame()
    body_bytes = len(frame) - FRAME_PREFIX.size
    peer = peer_factory(frame)
    at_cap = BrokerSocket("127.0.0.1", peer.port, 10.0, max_frame_bytes=body_bytes)
    try:
        assert at_cap.request(ApiKey.API_VERSIONS, {})["error_code"] == 0
    finally:
        at_cap.close()

    peer = peer_factory(frame)
    below = BrokerSocket("127.0.0.1", peer.port, 10.0, max_frame_bytes=body_bytes - 1)
    with pytest.raises(FrameTooLargeError):
        below.request(ApiKey.API_VERSIONS, {})
    assert below.sock.fileno() == -1
