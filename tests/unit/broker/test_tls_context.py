"""The broker's TLS contexts and principals without a network: TLS 1.2 at least, the client
certificate policy as configured, Kafka's DN form (RFC 2253 order and escaping), and a
reload that keeps the old certificate when the new files are bad."""

from __future__ import annotations

import logging
import ssl

import pytest

from tslog.broker.config import BrokerConfig, ConfigError
from tslog.broker.security.tls import peer_context, reload, server_context, subject_dn

from tests.helpers.tls import make_tls_files


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_tls_files(tmp_path_factory.mktemp("certs"))


@pytest.mark.parametrize("auth, mode", [("none", ssl.CERT_NONE),
                                        ("requested", ssl.CERT_OPTIONAL),
                                        ("required", ssl.CERT_REQUIRED)])
def test_server_context_is_tls_1_2_or_later_with_the_configured_client_auth(certs, auth, mode):
    context = server_context(BrokerConfig(**certs.broker_config(auth)))
    assert context.minimum_version == ssl.TLSVersion.TLSv1_2
    assert context.verify_mode == mode


def test_no_certificate_means_plain_tcp_both_ways():
    assert server_context(BrokerConfig()) is None and peer_context(BrokerConfig()) is None


def test_peer_context_verifies_peers_and_presents_the_broker_certificate(certs):
    context = peer_context(BrokerConfig(**certs.broker_config("required")))
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert context.minimum_version == ssl.TLSVersion.TLSv1_2


@pytest.mark.parametrize("settings, problem", [
    ({"tls_cert_file": "c.pem"}, "tls_cert_file and tls_key_file go together"),
    ({"tls_client_auth": "required"}, "tls_client_auth needs TLS on the listener"),
    ({"tls_cert_file": "c.pem", "tls_key_file": "k.pem", "tls_client_auth": "required"},
     "needs tls_ca_file"),
    ({"tls_cert_file": "c.pem", "tls_key_file": "k.pem", "tls_client_auth": "yes"},
     "must be none, requested or required"),
])
def test_settings_that_cannot_work_together_are_refused(settings, problem):
    with pytest.raises(ConfigError, match=problem):
        BrokerConfig(**settings)


def test_subject_dn_is_rfc_2253_order_with_escapes():
    subject = ((("countryName", "US"),), (("organizationName", "acme, inc"),),
               (("organizationalUnitName", "eng"), ("commonName", "a+b")),
               (("commonName", " alice#"),))
    assert subject_dn(subject) == "CN=\\ alice#,OU=eng+CN=a\\+b,O=acme\\, inc,C=US"


def test_a_bad_reload_keeps_the_old_certificate(certs, caplog):
    caplog.set_level(logging.INFO, "tslog.broker.security")
    config = BrokerConfig(**certs.broker_config("required"))
    context = server_context(config)
    stats = context.cert_store_stats()
    broken = BrokerConfig(**{**certs.broker_config("required"),
                             "tls_key_file": certs.other_broker_key})
    reload([context], broken)
    assert "TLS reload failed, still serving the previous certificate" in caplog.text
    assert "PRIVATE KEY" not in caplog.text
    reload([context], config)
    assert "reloaded TLS certificate" in caplog.text and "valid until" in caplog.text
    assert context.cert_store_stats() == stats  # the same CA, loaded again: no growth
