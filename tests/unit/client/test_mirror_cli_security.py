"""The mirror's two security settings: ``--source-config``/``--target-config`` or the
``[mirror]`` section's ``source-config``/``target-config`` name properties files; each
cluster's password comes from its file or its own environment variable, never a flag."""

from __future__ import annotations

import argparse

import pytest

from tslog.client.cli_mirror import (
    PASSWORD_ENV,
    _settings,
    add_mirror_options,
    cluster_security,
)
from tslog.client.security import SecurityConfigError


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(exit_on_error=False)
    add_mirror_options(parser)
    return parser.parse_args(list(argv))


def write(path, text: str) -> str:
    path.write_text(text)
    return str(path)


def test_the_toml_section_names_each_clusters_file_and_flags_win(tmp_path):
    config = write(tmp_path / "mirror.toml", '[mirror]\nsource = "127.0.0.1:1"\n'
                   'target = "127.0.0.1:2"\ntopics = "t"\nsource-config = "a.properties"\n'
                   'target_config = "b.properties"\n')
    settings = _settings(parse("--config", config))
    assert (settings["source_config"], settings["target_config"]) == ("a.properties",
                                                                      "b.properties")
    settings = _settings(parse("--config", config, "--target-config", "c.properties"))
    assert settings["target_config"] == "c.properties"


def test_each_cluster_takes_its_own_password_variable(tmp_path, monkeypatch):
    properties = write(tmp_path / "p", "security.protocol=SASL_PLAINTEXT\nsasl.username=u\n")
    monkeypatch.setenv(PASSWORD_ENV["source"], "source-secret")
    monkeypatch.setenv(PASSWORD_ENV["target"], "target-secret")
    assert cluster_security(properties, "source").sasl_password == "source-secret"
    assert cluster_security(properties, "target").sasl_password == "target-secret"
    assert cluster_security(None, "target") is None
    monkeypatch.delenv(PASSWORD_ENV["target"])
    with pytest.raises(SecurityConfigError, match="needs a SASL username and password"):
        cluster_security(properties, "target")


def test_there_is_no_password_flag():
    with pytest.raises((argparse.ArgumentError, SystemExit)):
        parse("--source", "a:1", "--target-password", "x")
