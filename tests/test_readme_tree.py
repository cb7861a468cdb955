"""README's "What is here" table against the tree: a newcomer follows it to the code, so it
names every package the wheel ships and no folder that is gone."""

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def listed_folders() -> set[str]:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## What is here", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `([\w/]+/)`", section, flags=re.MULTILINE))


def package_folders() -> set[str]:
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    roots = {package: folder for package, folder in setuptools["package-dir"].items()}
    folders = set()
    for package in setuptools["packages"]:
        top = next(p for p in sorted(roots, key=len, reverse=True) if package.startswith(p))
        rest = package[len(top):].lstrip(".").replace(".", "/")
        folders.add(roots[top] + "/" + (rest + "/" if rest else ""))
    return folders


def test_every_package_has_a_row():
    assert package_folders() - listed_folders() == set()


def test_every_row_names_a_folder_that_exists():
    assert {f for f in listed_folders() if not (ROOT / f).is_dir()} == set()


def named_files() -> list[tuple[str, str]]:
    """(row's folder, file) for every ``name.py`` a row of the table names in backquotes."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## What is here", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([\w/]+/)`[^|]*\|(.*)\|$", section, flags=re.MULTILINE)
    return [(folder, name) for folder, text in rows
            for name in re.findall(r"`([\w/]+\.py)`", text)]


def test_every_file_a_row_names_is_in_its_folder():
    """A moved module (issue 41 moved the groups' stores and services into
    ``broker/groups/``) must not leave the table pointing at where it was."""
    named = named_files()
    assert len(named) > 10, "the check read too few names to mean anything"
    assert [f"{folder}{name}" for folder, name in named if not (ROOT / folder / name).is_file()] == []
