"""docs/client.md's examples up to "Consumer groups" (the imports, the Producer's and the
Consumer's) run as written, in order, in one namespace, against a real broker; the later
sections' examples are run by test_client_groups_doc.py, test_groups_docs.py and
test_create_partitions.py. Also: ``to_arrow`` without pyarrow names the extra to install."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

from tslog.client import Admin

DOC = Path(__file__).resolve().parents[2] / "docs" / "client.md"


def indented_blocks(text: str) -> list[str]:
    """The indented (4-space) code blocks of ``text`` outside lists, in order."""
    blocks = re.findall(r"(?:^|\n\n)((?: {4}.*\n|\n(?= {4}))+)", text + "\n")
    return [textwrap.dedent(block) for block in blocks]


def test_producer_and_consumer_examples_run_in_order(broker, capsys):
    text = DOC.read_text(encoding="utf-8")
    blocks = indented_blocks(text[:text.index("\n## Consumer groups\n")])
    assert len(blocks) == 5, blocks  # imports, send, send_batch, consume, to_arrow
    with Admin(broker.bootstrap) as admin:
        admin.create_topic("events")
    namespace: dict = {}
    for block in blocks:
        code = block.replace("127.0.0.1:9092", broker.bootstrap)
        exec(compile(code, str(DOC), "exec"), namespace)
    # send, async send, send_batch, async send_batch: the last one's metadata is offsets 5-7
    assert [m.offset for m in namespace["metadata"]] == [5, 6, 7]
    printed = capsys.readouterr().out.splitlines()
    assert printed[:8] == ["0 b'value'", "1 b'value'", "2 b'a'", "3 b'b'", "4 None",
                           "5 b'a'", "6 b'b'", "7 None"]  # the consumer's loop
    arrow = [line.split(" ", 1) for line in printed[8:]]  # one line per fetched batch
    assert sum(int(rows) for rows, _ in arrow) == 8
    assert {columns for _, columns in arrow} == {
        "['key', 'value', 'offset', 'createTime', 'timestamp']"}


def test_to_arrow_without_pyarrow_names_the_extra():
    probe = ("import sys; sys.modules['pyarrow'] = None\n"
             "from tslog.protocol.records import to_arrow\n"
             "try:\n    to_arrow(None)\nexcept ImportError as e:\n    print(e)\n")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                            timeout=60)
    assert "pip install 'tslog[arrow]'" in result.stdout, result
