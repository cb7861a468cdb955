import os
import sys
from pathlib import Path

import pytest
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


# Tests that share one heavy service per process run on one worker together; every other test
# file is a group of its own, so its module-scoped fixtures start once (``--dist loadgroup``).
_SHARED_WORKER_MARKERS = ("spark", "kafka_reference", "console", "faults")


def pytest_collection_modifyitems(config, items):
    for item in items:
        group = next((name for name in _SHARED_WORKER_MARKERS
                      if item.get_closest_marker(name)), None)
        item.add_marker(pytest.mark.xdist_group(group or str(item.path)))
