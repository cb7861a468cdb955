"""The project's build backend: setuptools, plus a real ``pyspark_tslog.py`` in editable wheels.

PySpark finds Python data sources by listing the top-level ``pyspark_*`` modules on its
workers' ``sys.path`` (``pkgutil.iter_modules``). A wheel install puts ``pyspark_tslog.py`` in
site-packages, where that listing sees it. A setuptools editable install (``pip install -e``)
does not: with this project's ``package-dir`` mapping it serves every module through an import
hook, which imports fine but is invisible to a listing of ``sys.path``, so
``format("tslog")`` failed with ``DATA_SOURCE_NOT_FOUND`` after the README's own install.

So the editable wheel also gets the three-line ``pyspark_tslog.py`` as a real file, which pip
installs into site-packages like any module. It only re-exports
``tslog.spark_connector.TslogDataSource``, which the import hook still serves from the
checkout, so edits to the connector take effect without reinstalling. Everything else is
setuptools' ``build_meta``, unchanged.
"""

from __future__ import annotations

import base64
import hashlib
import os
import zipfile
from pathlib import Path

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F401,F403  (the PEP 517/660 hooks we do not change)

DISCOVERY_MODULE = "pyspark_tslog.py"


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    name = _setuptools.build_editable(wheel_directory, config_settings, metadata_directory)
    source = Path(__file__).resolve().parent.parent / DISCOVERY_MODULE
    _add_file(Path(wheel_directory) / name, DISCOVERY_MODULE, source.read_bytes())
    return name


def _record_line(arcname: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={digest},{len(data)}"


def _add_file(wheel: Path, arcname: str, data: bytes) -> None:
    """Rewrite ``wheel`` with ``arcname`` added and listed in its RECORD."""
    temporary = wheel.with_suffix(".tmp")
    with zipfile.ZipFile(wheel) as old, \
            zipfile.ZipFile(temporary, "w", zipfile.ZIP_DEFLATED) as new:
        for item in old.infolist():
            content = old.read(item)
            if item.filename.endswith(".dist-info/RECORD"):
                lines = content.decode().splitlines()
                lines.insert(len(lines) - 1, _record_line(arcname, data))
                content = ("\n".join(lines) + "\n").encode()
            elif item.filename == arcname:
                continue
            new.writestr(item, content)
        new.writestr(arcname, data)
    os.replace(temporary, wheel)
