"""Is tslog importable where Spark runs Python? One question, asked before the first read.

The usual way a new Spark user breaks a Python data source is the interpreter: PySpark starts
its Python workers with ``$PYSPARK_PYTHON`` (default: the first ``python3`` on ``PATH``), not
with the interpreter the driver runs in, so a tslog installed in a virtual environment is
invisible to them unless that variable points into it when the session starts. Spark
then reports a deep traceback from unpickling, or ``DATA_SOURCE_NOT_FOUND``. The probe below
runs in a worker and reports what it found, so the answer is one line that says what to do.

The probe must not need tslog to be unpickled (that is the thing being checked), so it is
compiled into a module that cannot be imported, which cloudpickle then sends by value.
"""

from __future__ import annotations

import os
import sys

_PROBE_SOURCE = '''
def probe(_):
    import sys
    try:
        import tslog.spark_connector  # noqa: F401
    except Exception as exc:  # any failure to import is the answer
        return sys.executable + "\\n" + type(exc).__name__ + ": " + str(exc)
    return sys.executable + "\\n"
'''


class TslogWorkerError(RuntimeError):
    """Spark's Python workers cannot import tslog."""


def _probe():
    namespace: dict = {"__name__": "tslog_worker_probe"}
    exec(compile(_PROBE_SOURCE, "<tslog worker probe>", "exec"), namespace)
    return namespace["probe"]


def _configured_python(spark) -> str:
    try:
        conf = spark.conf.get("spark.pyspark.python", None)
    except Exception:  # Spark Connect may refuse to read static confs
        conf = None
    return os.environ.get("PYSPARK_PYTHON") or conf or "python3"


def fix_hint(worker_python: str) -> str:
    return (f"set PYSPARK_PYTHON={sys.executable} before the session starts "
            f"(os.environ['PYSPARK_PYTHON'] = sys.executable), or install tslog[spark] into "
            f"{worker_python}")


def check_workers(spark) -> str:
    """Run the probe in one Spark Python worker; return the worker's interpreter path, or
    raise ``TslogWorkerError`` whose first line names the interpreter and the fix."""
    from pyspark.sql.functions import udf

    configured = _configured_python(spark)
    try:
        # A pickled (not Arrow) UDF: the probe must need nothing beyond PySpark's own worker.
        probe = udf(_probe(), useArrow=False)
        answer = spark.range(1).select(probe("id").alias("a")).first()["a"]
    except Exception as exc:  # the worker could not even start: say so, briefly
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise TslogWorkerError(
            f"Spark could not run a Python worker with {configured!r} to check for tslog "
            f"({first[:300]}); {fix_hint(configured)}") from None
    executable, _, problem = answer.partition("\n")
    if problem:
        raise TslogWorkerError(
            f"Spark's Python workers run {executable}, which cannot import tslog "
            f"({problem}); {fix_hint(executable)}")
    return executable
