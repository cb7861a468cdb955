import os
import sys
from pathlib import Path

from hypothesis import HealthCheck, settings

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

# CI runs more examples than a developer's default; both are bounded in time (CI's whole run
# must stay within its budget: 300 examples each cost about four minutes more than 150).
settings.register_profile(
    "ci", max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "dev", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("ci" if os.environ.get("CI") else os.environ.get("HYPOTHESIS_PROFILE", "dev"))



# Each test file runs on one worker (its module-scoped brokers start once), and the folders
# whose tests share one heavy service per process run on one worker each (one SparkSession,
# one Apache Kafka, one browser, one set of network namespaces). xdist's ``loadgroup`` marks
# cannot do this on pytest 9 (they rename node ids, which pytest 9 no longer allows), so the
# scheduler is xdist's by-scope one with the scope chosen here.
_SHARED_WORKER_FOLDERS = ("tests/spark/", "tests/kafka_reference/", "tests/integration/console/",
                          "tests/faults/")

try:
    from xdist.scheduler import LoadScopeScheduling
except ImportError:  # without pytest-xdist the suite runs in one process
    LoadScopeScheduling = None

if LoadScopeScheduling is not None:
    class _ByFileOrSharedService(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            folder = next((f for f in _SHARED_WORKER_FOLDERS if nodeid.startswith(f)), None)
            return folder or nodeid.split("::", 1)[0]

    def pytest_xdist_make_scheduler(config, log):
        return _ByFileOrSharedService(config, log)
