"""Structure the design promises, checked on the source: the dependency direction between
packages, no I/O in the protocol package, no asyncio in storage, small modules.

DESIGN.md: protocol <- broker, protocol <- client <- spark_connector; the broker never imports
the client; storage has no asyncio; the protocol package does no I/O.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {"protocol": "protocol", "broker": "broker", "client": "client", "spark_connector": "spark_connector"}
ALLOWED = {
    "protocol": {"protocol"},
    "broker": {"protocol", "broker"},
    "client": {"protocol", "client"},
    "spark_connector": {"protocol", "client", "spark_connector"},
}
NO_IO_MODULES = {"socket", "asyncio", "selectors", "ssl", "subprocess", "uvloop"}
MAX_MODULE_LINES = 500


def source_files(folder: str):
    return sorted((ROOT / folder).rglob("*.py"))


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def tslog_package(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] == "tslog" and len(parts) > 1:
        return parts[1]
    return None


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_dependency_direction(package):
    offenders = []
    for path in source_files(PACKAGES[package]):
        for module in imported_modules(path):
            target = tslog_package(module)
            if target is not None and target not in ALLOWED[package]:
                offenders.append(f"{path.relative_to(ROOT)} imports {module}")
    assert not offenders, offenders


def imports_of(folder: str, banned: set[str]) -> list[str]:
    return [
        f"{path.relative_to(ROOT)} imports {module}"
        for path in source_files(folder)
        for module in imported_modules(path)
        if module.split(".")[0] in banned
    ]


def test_protocol_does_no_io():
    assert not imports_of("protocol", NO_IO_MODULES)


def test_storage_has_no_asyncio():
    assert not imports_of("broker/storage", {"asyncio", "uvloop"})


def test_modules_stay_small():
    large = [
        f"{path.relative_to(ROOT)}: {n} lines"
        for folder in PACKAGES.values()
        for path in source_files(folder)
        if (n := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    ]
    assert not large, large


# Undefined names (pyflakes F821, with F822/F823, its checks of ``__all__`` entries and of
# locals read before assignment): a name used on a rare path, e.g. an exception raised only
# after ``close()``, fails as NameError only when that path runs. bench/ and tests/ too.
NAME_CHECKED_FOLDERS = ["protocol", "broker", "client", "spark_connector", "bench", "tests"]


def test_no_undefined_names():
    from pyflakes import checker, messages  # the dev extra; a missing one fails, not skips

    kinds = (messages.UndefinedName, messages.UndefinedExport, messages.UndefinedLocal)
    paths = [path for folder in NAME_CHECKED_FOLDERS for path in source_files(folder)]
    paths.append(ROOT / "pyspark_tslog.py")
    found = []
    for path in paths:
        name = str(path.relative_to(ROOT))
        tree = ast.parse(path.read_text(), filename=name)
        found += [str(message) for message in checker.Checker(tree, filename=name).messages
                  if isinstance(message, kinds)]
    assert len(paths) > 100, "the check read too few files to mean anything"
    assert not found, found
