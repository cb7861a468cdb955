"""``--command-config`` / ``$TSLOG_COMMAND_CONFIG``: Kafka's properties file becomes the
command's ``Security``; the SASL password comes from the file or ``$TSLOG_SASL_PASSWORD``,
never from a flag, and never shows in an error."""

from __future__ import annotations

import argparse

import pytest

from tslog.client.cli_security import add_security_options, security_from
from tslog.client.security import SecurityConfigError


def parse(argv: list[str]) -> argparse.Namespace:
    parser, common = argparse.ArgumentParser(), argparse.ArgumentParser(add_help=False)
    add_security_options(parser, common)
    commands = parser.add_subparsers()
    commands.add_parser("topics", parents=[common])
    return parser.parse_args(argv)


@pytest.fixture
def sasl_file(tmp_path):
    path = tmp_path / "client.properties"
    path.write_text("security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-256\n"
                    "sasl.username=alice\n")
    return str(path)


def test_no_file_is_plain_tcp():
    assert security_from(parse(["topics"]), {}) is None


def test_the_flag_before_or_after_the_subcommand_or_the_environment(sasl_file):
    environ = {"TSLOG_SASL_PASSWORD": "pw"}
    for argv, env in ((["--command-config", sasl_file, "topics"], environ),
                      (["topics", "--command-config", sasl_file], environ),
                      (["topics"], {**environ, "TSLOG_COMMAND_CONFIG": sasl_file})):
        security = security_from(parse(argv), env)
        assert (security.protocol, security.sasl_username) == ("SASL_SSL", "alice")
        assert security.sasl_password == "pw" and "pw" not in repr(security)


def test_a_password_in_the_file_wins_and_none_at_all_is_an_error(sasl_file, tmp_path):
    with pytest.raises(SecurityConfigError, match="needs a SASL username and password"):
        security_from(parse(["--command-config", sasl_file, "topics"]), {})
    secret = tmp_path / "password"
    secret.write_text("from-file\n")
    with open(sasl_file, "a") as handle:
        handle.write(f"sasl.password.file={secret}\n")
    security = security_from(parse(["--command-config", sasl_file, "topics"]),
                             {"TSLOG_SASL_PASSWORD": "from-env"})
    assert security.sasl_password == "from-file"


def test_there_is_no_password_flag():
    with pytest.raises(SystemExit):
        parse(["topics", "--sasl-password", "x"])
