"""TLS on the Kafka port: the native listener's context (here with client certificates
required), so librdkafka produces and consumes over mutual TLS as ``User:CN=alice,...``, and a
plain-TCP Kafka request gets no answer."""

from __future__ import annotations

import socket
import struct
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.helpers.broker_process import BrokerProcess, free_port
from tests.helpers.tls import make_tls_files
from tslog.protocol.kafka import encode_request


def test_mutual_tls_on_the_kafka_port(tmp_path):
    files = make_tls_files(tmp_path / "tls")
    port = free_port()
    broker = BrokerProcess(tmp_path / "data", config=files.broker_config("required"),
                           args=["--kafka-listen", f"127.0.0.1:{port}"],
                           ssl_context=files.client_context(files.alice))
    broker.start()
    try:
        tls = {"bootstrap.servers": f"127.0.0.1:{port}", "security.protocol": "SSL",
               "ssl.ca.location": files.ca, "ssl.certificate.location": files.alice.cert,
               "ssl.key.location": files.alice.key}
        producer = Producer({**tls, "enable.idempotence": True})
        admin = AdminClient(tls)
        [future] = admin.create_topics([NewTopic("secure", 1, 1)]).values()
        future.result(10)
        producer.produce("secure", b"over tls", b"k", partition=0)
        assert producer.flush(10) == 0
        consumer = Consumer({**tls, "group.id": "unused", "enable.auto.commit": False})
        consumer.assign([TopicPartition("secure", 0, 0)])
        deadline = time.monotonic() + 10
        message = None
        while message is None and time.monotonic() < deadline:
            message = consumer.poll(0.5)
        consumer.close()
        assert message is not None and message.error() is None
        assert (message.key(), message.value()) == (b"k", b"over tls")
        assert "authenticated as User:CN=alice,OU=eng,O=acme" in broker.log_text()
        with socket.create_connection(("127.0.0.1", port), timeout=5) as plain:
            request = encode_request(18, 3, 1, "plain", {})
            plain.sendall(struct.pack(">I", len(request)) + request)
            try:
                answer = plain.recv(4096)
            except (ConnectionResetError, socket.timeout):
                answer = b""
            # A TLS alert at most, never a Kafka response (its correlation id 1 at byte 4)
            assert answer[4:8] != struct.pack(">i", 1)
    finally:
        broker.cleanup()
