"""The Spark source over TLS and SCRAM: Spark's Kafka-source option names build the
connection's security; a read over mutual TLS, and one over TLS with a SCRAM login, return
every record; the password stays out of the options' repr, Spark's plan and the broker's
log. Option parsing is checked without Spark first."""

from __future__ import annotations

import pytest

from tslog.client import Admin, Producer
from tslog.spark_connector._options import TslogOptionError, parse_options

from tests.helpers.broker_process import BrokerProcess
from tests.helpers.tls import Security, make_tls_files

BASE = {"bootstrap": "127.0.0.1:9092", "topic": "events"}
SECRET = "s3cr3t-never-shown"


def parse(**options):
    return parse_options({**BASE, **options}, streaming=False)


def test_no_security_option_is_plain_tcp():
    assert parse().security is None


def test_kafka_ssl_names_build_one_security(tmp_path):
    opts = parse(**{"kafka.security.protocol": "SSL",
                    "kafka.ssl.truststore.location": "/certs/ca.pem",
                    "kafka.ssl.keystore.location": "/certs/me.pem"})
    security = opts.security
    assert (security.protocol, security.ssl_cafile) == ("SSL", "/certs/ca.pem")
    assert security.ssl_certfile == security.ssl_keyfile == "/certs/me.pem"  # one PEM


def test_sasl_from_jaas_config_keeps_the_password_out_of_reprs():
    jaas = ('org.apache.kafka.common.security.scram.ScramLoginModule required '
            f'username="alice" password="{SECRET}";')
    opts = parse(**{"kafka.security.protocol": "SASL_SSL", "kafka.sasl.mechanism":
                    "SCRAM-SHA-256", "kafka.sasl.jaas.config": jaas})
    assert opts.security.sasl_username == "alice" and opts.security.sasl_password == SECRET
    assert SECRET not in repr(opts)


def test_bad_security_options_name_the_problem_not_the_password():
    with pytest.raises(TslogOptionError, match="needs a SASL username and password"):
        parse(**{"kafka.security.protocol": "SASL_SSL", "kafka.sasl.username": "alice"})
    with pytest.raises(TslogOptionError, match="jaas.config") as caught:
        parse(**{"kafka.sasl.jaas.config": f"PlainLoginModule required password=\"{SECRET}\";"})
    assert SECRET not in str(caught.value)


@pytest.fixture(scope="module")
def tls_broker(tmp_path_factory):
    certs = make_tls_files(tmp_path_factory.mktemp("spark-certs"))
    process = BrokerProcess(tmp_path_factory.mktemp("spark-tls") / "data",
                            config=certs.broker_config("required"),
                            ssl_context=certs.client_context(certs.alice))
    process.start()
    yield process, certs
    process.cleanup()


@pytest.mark.spark
@pytest.mark.slow
def test_a_spark_read_over_mutual_tls_returns_every_record(spark, tls_broker):
    broker, certs = tls_broker
    security = certs.security(certs.alice)
    with Admin(broker.bootstrap, security=security) as admin:
        admin.create_topic("spark-tls", partitions=2)
    with Producer(broker.bootstrap, security=security) as producer:
        for i in range(200):
            producer.send("spark-tls", b"r%03d" % i, key=b"%d" % i)
    df = (spark.read.format("tslog").option("bootstrap", broker.bootstrap)
          .option("topic", "spark-tls")
          .option("kafka.security.protocol", "SSL")
          .option("kafka.ssl.truststore.location", certs.ca)
          .option("kafka.ssl.keystore.location", certs.alice.cert)
          .option("kafka.ssl.key.location", certs.alice.key)
          .option("kafka.sasl.password", SECRET)  # unused by SSL; must not show anywhere
          .load())
    values = sorted(row.value for row in df.select("value").collect())
    assert values == [b"r%03d" % i for i in range(200)]
    plan = df._jdf.queryExecution().toString()  # today it shows no option at all
    assert SECRET not in plan
    assert "authenticated as User:CN=alice,OU=eng,O=acme" in broker.log_text()


@pytest.mark.spark
@pytest.mark.slow
def test_a_spark_read_over_tls_with_scram_returns_every_record(spark, tmp_path):
    """SASL_SSL, Spark's names: the driver's planning and every task's sockets log in."""
    certs = make_tls_files(tmp_path / "certs")
    users = tmp_path / "users"
    users.write_text(f"spark:{SECRET}\n")
    broker = BrokerProcess(tmp_path / "data", ssl_context=certs.client_context(),
                           config={**certs.broker_config("none"),
                                   "sasl_mechanisms": "SCRAM-SHA-512",
                                   "sasl_bootstrap_users_file": str(users)}).start()
    try:
        security = Security(protocol="SASL_SSL", ssl_cafile=certs.ca,
                            sasl_mechanism="SCRAM-SHA-512", sasl_username="spark",
                            sasl_password=SECRET)
        with Admin(broker.bootstrap, security=security) as admin:
            admin.create_topic("spark-scram", partitions=2)
        with Producer(broker.bootstrap, security=security) as producer:
            for i in range(100):
                producer.send("spark-scram", b"s%03d" % i, key=b"%d" % i)
        df = (spark.read.format("tslog").option("bootstrap", broker.bootstrap)
              .option("topic", "spark-scram")
              .option("kafka.security.protocol", "SASL_SSL")
              .option("kafka.ssl.truststore.location", certs.ca)
              .option("kafka.sasl.mechanism", "SCRAM-SHA-512")
              .option("kafka.sasl.username", "spark")
              .option("kafka.sasl.password", SECRET)
              .load())
        values = sorted(row.value for row in df.select("value").collect())
        assert values == [b"s%03d" % i for i in range(100)]
        assert SECRET not in df._jdf.queryExecution().toString()
        log = broker.log_text()
        assert "authenticated as User:spark" in log and SECRET not in log
    finally:
        broker.cleanup()
