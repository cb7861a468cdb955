"""Readers for the deploy files the tests check: the Dockerfile, YAML documents, TOML.

The Dockerfile reader is deliberately small (instructions, continuation lines, comments,
stages): enough to check what the image promises and to lift its pip commands out verbatim,
so the wheel-install test runs exactly what the image build runs.
"""

from __future__ import annotations

import fnmatch
import os
import shlex
import shutil
import tomllib
from dataclasses import dataclass
from pathlib import Path

import yaml

from tslog.broker.config import BrokerConfig, build_config, layer_from_toml

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
DOCKERFILE = ROOT / "Dockerfile"


@dataclass(frozen=True)
class Instruction:
    stage: int  # 0 for the first FROM's stage, 1 for the next, ...
    keyword: str  # upper case: FROM, RUN, COPY, ...
    arguments: str  # the rest of the instruction, continuation lines joined


def dockerfile_instructions(text: str) -> list[Instruction]:
    """The instructions of a Dockerfile, in order, tagged with their build stage."""
    instructions: list[Instruction] = []
    stage = -1
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if pending and line.startswith("#"):
            continue  # comment lines inside a continued instruction are dropped by Docker
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = pending + line
        pending = ""
        keyword, _, arguments = line.partition(" ")
        keyword = keyword.upper()
        if keyword == "FROM":
            stage += 1
        instructions.append(Instruction(stage, keyword, " ".join(arguments.split())))
    return instructions


def final_stage(instructions: list[Instruction]) -> list[Instruction]:
    last = max(i.stage for i in instructions)
    return [i for i in instructions if i.stage == last]


def run_commands(instructions: list[Instruction]) -> list[list[str]]:
    """Every shell command of the RUN instructions, split at ``&&``, as argument lists."""
    commands = []
    for instruction in instructions:
        if instruction.keyword == "RUN":
            for part in instruction.arguments.split("&&"):
                commands.append(shlex.split(part))
    return commands


def env_values(instructions: list[Instruction]) -> dict[str, str]:
    """The ENV settings (``KEY=value`` form), later ones winning."""
    values: dict[str, str] = {}
    for instruction in instructions:
        if instruction.keyword == "ENV":
            for item in shlex.split(instruction.arguments):
                key, _, value = item.partition("=")
                values[key] = value
    return values


def pip_command(commands: list[list[str]], action: str) -> list[str]:
    """The one command that runs ``python -m pip ACTION``."""
    found = [c for c in commands if c[1:4] == ["-m", "pip", action]]
    assert len(found) == 1, f"expected one 'pip {action}' command, found {found}"
    return found[0]


def yaml_documents(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as handle:
        return [doc for doc in yaml.safe_load_all(handle) if doc is not None]


def kubernetes_objects() -> list[dict]:
    """Every object of the manifests kustomization.yaml lists, in order."""
    kustomization = yaml_documents(DEPLOY / "kubernetes" / "kustomization.yaml")[0]
    objects = []
    for name in kustomization["resources"]:
        objects.extend(yaml_documents(DEPLOY / "kubernetes" / name))
    return objects


def toml_file(path: Path) -> dict:
    return tomllib.loads(path.read_text(encoding="utf-8"))


def dockerignore_patterns() -> list[str]:
    lines = (ROOT / ".dockerignore").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def build_context_excluded(relative: str, patterns: list[str]) -> bool:
    """Whether Docker leaves ``relative`` (a path in the repository) out of the build context.

    Covers the pattern forms .dockerignore uses here: plain paths, ``*`` globs and a leading
    ``**/`` (any depth); a path is out when it or any folder above it matches.
    """
    parts = relative.split("/")
    prefixes = ["/".join(parts[:n]) for n in range(1, len(parts) + 1)]
    for pattern in patterns:
        for prefix in prefixes:
            if fnmatch.fnmatchcase(prefix, pattern):
                return True
            if pattern.startswith("**/") and fnmatch.fnmatchcase(
                    prefix.rpartition("/")[2], pattern[3:]):
                return True
    return False


def copy_build_context(destination: Path) -> Path:
    """Copy the repository into ``destination`` as ``docker build`` sends it (.dockerignore
    applied), so a build there cannot read anything the image build could not."""
    patterns = dockerignore_patterns()
    for folder, subfolders, files in os.walk(ROOT):
        here = Path(folder).relative_to(ROOT)
        subfolders[:] = [name for name in subfolders if not build_context_excluded(
            (here / name).as_posix(), patterns)]
        for name in files:
            relative = (here / name).as_posix()
            if not build_context_excluded(relative, patterns):
                (destination / here).mkdir(parents=True, exist_ok=True)
                shutil.copy2(ROOT / relative, destination / relative)
    return destination


def broker_config_from_toml(text: str) -> BrokerConfig:
    """The BrokerConfig a broker started with ``--config`` on this TOML (and no environment)
    would run with; fails the test with the broker's own list of problems otherwise."""
    problems: list[str] = []
    layer = layer_from_toml(text, problems)
    assert problems == [], problems
    # No operator flags: every example either configures client authentication or listens
    # on loopback, so protected mode (docs/security.md) lets it start as written.
    return build_config([layer])


def systemd_unit(path: Path) -> dict[str, list[tuple[str, str]]]:
    """A unit file as {section: [(key, value), ...]}; keys may repeat, as systemd allows."""
    sections: dict[str, list[tuple[str, str]]] = {}
    current = None
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            current = sections.setdefault(line.strip("[]"), [])
        else:
            key, _, value = line.partition("=")
            current.append((key.strip(), value.strip()))
    return sections
