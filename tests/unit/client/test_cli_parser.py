"""The `tslog` command line's parser, without a broker: every option says what it does, the
version is the installed one, and --bootstrap goes before or after the subcommand."""

from __future__ import annotations

import argparse
import importlib.metadata
import subprocess
import sys

import pytest

from tslog.client.cli import _build_parser


def subparsers(parser: argparse.ArgumentParser, path=()):
    """(command path, parser) for every parser under ``parser``, itself included."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from subparsers(child, (*path, name))


def test_every_option_of_every_command_has_help():
    missing = []
    for path, parser in subparsers(_build_parser()):
        text = parser.format_help()
        assert "usage: tslog" in text and "``" not in text, text  # plain text, no reST
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                continue
            if not action.help:
                missing.append(f"tslog {' '.join(path)} {action.dest}")
    assert not missing, f"options without help: {missing}"


def test_walk_covers_every_command():
    paths = {" ".join(path) for path, _ in subparsers(_build_parser())}
    assert {"topics create", "topics alter-config", "topics delete", "produce", "consume",
            "offsets"} <= paths


@pytest.mark.parametrize("argv", [
    ["--bootstrap", "h:1", "topics", "list"],
    ["topics", "list", "--bootstrap", "h:1"],
    ["topics", "--bootstrap", "h:1", "list"],
    ["--bootstrap", "h:1", "consume", "t"],
    ["consume", "t", "--bootstrap", "h:1"],
    ["--bootstrap", "h:1", "produce", "t"],
    ["offsets", "t", "--time", "now", "--bootstrap", "h:1"],
])
def test_bootstrap_before_or_after_the_subcommand(argv):
    assert _build_parser().parse_args(argv).bootstrap == "h:1"


def test_bootstrap_default_when_not_given(monkeypatch):
    monkeypatch.setenv("TSLOG_BOOTSTRAP", "env-host:7")
    assert _build_parser().parse_args(["topics", "list"]).bootstrap == "env-host:7"


def run(*args):
    return subprocess.run([sys.executable, "-m", "tslog.client.cli", *args],
                          capture_output=True, text=True, timeout=60)


def test_version_is_the_installed_package_version():
    result = run("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"tslog {importlib.metadata.version('tslog')}"


@pytest.mark.parametrize("args", [
    ("topics", "create"),                         # no topic
    ("produce", "t", "--compression", "lz4"),     # not a choice
    ("topics", "nonsense"),
])
def test_a_bad_command_line_exits_2(args):
    assert run(*args).returncode == 2
