"""A real Prometheus server (Debian's ``/usr/bin/prometheus``) for tests, on a loopback port.

``PrometheusProcess`` writes a config scraping the given targets (and evaluating the given
rule files) every second, keeps its TSDB in a temporary directory, waits for ``/-/ready`` and
is stopped by its pid. ``query`` runs an instant query through the HTTP API
(``/api/v1/query``) and returns the vector's samples.
"""

from __future__ import annotations

import json
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

from tests.helpers.broker_process import free_port

PROMETHEUS = "/usr/bin/prometheus"
PROMTOOL = "/usr/bin/promtool"
READY_TIMEOUT_S = 30.0


class PrometheusProcess:
    def __init__(self, directory: Path, targets: list[str], job: str = "tslog",
                 rule_files: list[Path] = (), scrape: dict | None = None) -> None:
        """``scrape``: more keys of the job's scrape config (``scheme``, ``tls_config``,
        ``basic_auth``) for a secured endpoint."""
        self.directory = Path(directory)
        self.port = free_port()
        self.targets = targets
        self.job = job
        self.rule_files = [str(Path(path).resolve()) for path in rule_files]
        self.scrape = dict(scrape or {})
        self.log_path = self.directory / "prometheus.log"
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "PrometheusProcess":
        self.directory.mkdir(parents=True, exist_ok=True)
        config = self.directory / "prometheus.yml"
        config.write_text(json.dumps({  # JSON is YAML
            "global": {"scrape_interval": "1s", "scrape_timeout": "1s",
                       "evaluation_interval": "1s"},
            "rule_files": self.rule_files,
            "scrape_configs": [{"job_name": self.job,
                                "static_configs": [{"targets": self.targets}],
                                **self.scrape}],
        }))
        with open(self.log_path, "ab") as log_file:
            self.process = subprocess.Popen(
                [PROMETHEUS, f"--config.file={config}",
                 f"--storage.tsdb.path={self.directory / 'tsdb'}",
                 f"--web.listen-address=127.0.0.1:{self.port}"],
                stdout=log_file, stderr=subprocess.STDOUT, cwd=self.directory)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"prometheus exited with {self.process.returncode}:\n"
                                   f"{self.log_path.read_text(errors='replace')}")
            try:
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=1) as response:
                    if response.status == 200:
                        return self
            except OSError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError("prometheus not ready in time")

    def query(self, promql: str) -> list[tuple[dict, float]]:
        """Instant query: [(labels, value)] of the resulting vector (empty if no data yet)."""
        url = f"{self.url}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
        with urllib.request.urlopen(url, timeout=5) as response:
            document = json.load(response)
        assert document["status"] == "success", document
        return [(item["metric"], float(item["value"][1]))
                for item in document["data"]["result"]]

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(15)


def parse_samples(text: str) -> dict[str, float]:
    """{``name{labels}`` exactly as exposed: value} for every sample line of a scrape."""
    samples = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            samples[name] = float(value)
    return samples
