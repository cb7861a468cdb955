"""What ``pip install tslog`` ships is the whole code: every folder of Python modules under the
four package roots is a regular package listed in pyproject.toml. An editable install finds
an unlisted folder anyway, so only a wheel (the Docker image, a user's install) would miss
it, and the broker would fail to start there with ModuleNotFoundError.
"""

from __future__ import annotations

import tomllib

from tests.deploy.deployfiles import ROOT

SETUPTOOLS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def code_folders() -> dict[str, str]:
    """{dotted package name: folder} for every folder holding .py files under a package root."""
    folders = {}
    for package, root in SETUPTOOLS["package-dir"].items():
        for module in (ROOT / root).rglob("*.py"):
            relative = module.parent.relative_to(ROOT / root)
            if "__pycache__" not in relative.parts:
                folders[".".join([package, *relative.parts])] = str(module.parent)
    return folders


def test_every_code_folder_is_a_listed_package():
    missing = sorted(set(code_folders()) - set(SETUPTOOLS["packages"]))
    assert not missing, f"add {missing} to [tool.setuptools] packages in pyproject.toml"


def test_every_package_has_an_init_module():
    without = sorted(folder for folder in code_folders().values()
                     if not (ROOT.joinpath(folder) / "__init__.py").is_file())
    assert not without, f"namespace packages are left out of the wheel: {without}"
