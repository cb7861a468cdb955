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
