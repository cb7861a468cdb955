"""docs/security.md's "Authorization (ACLs)" section: its TOML settings start a broker, and
its Python example runs as written against it and prints what the page says. Only the
broker address is replaced, and ``super_users`` also names User:ANONYMOUS (this test's
client does not authenticate, and only a super user may manage ACLs)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "security.md"


def section() -> str:
    text = DOC.read_text()
    start = text.index("\n## Authorization (ACLs)\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else len(text)]


def test_the_acl_example_runs_as_documented(broker_factory, tmp_path):
    text = section()
    (toml,) = re.findall(r"```toml\n(.*?)```", text, flags=re.S)
    (source,) = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    printed = re.search(r"prints\n\n```\n(.*?)```", text, flags=re.S).group(1)
    config = tmp_path / "broker.toml"
    config.write_text(toml.replace('super_users = "', 'super_users = "User:ANONYMOUS;'))
    broker = broker_factory(args=["--config", str(config)])
    done = subprocess.run([sys.executable, "-c", source.replace("127.0.0.1:9092",
                                                                broker.bootstrap)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout == printed
    assert '"authorizer_enabled": true' in broker.log_text()  # the effective config
