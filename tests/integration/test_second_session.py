"""A reader's second session, scripted: what a user does after ``make demo``.

The README's tour (its blocks marked ``session``) is pasted whole into one shell, as a
reader does; before its last block (which stops everything) the session goes on as users
did when they tried the product: a second ``consumer run`` started by mistake, a replica of
their own through the embedded API, and a bucketed collection from docs/howto/buckets.md
written by a raw producer. Then every long-running command's ready line is checked, and
that nothing but the product's own lines reached the terminal at the default verbosity:
no traceback, no Java stack trace, no WARN or WARNING.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.examples.markdown import Example, fences, parse_marking
from tests.examples.pages import ROOT
from tests.examples.runner import run

BIN = ROOT / ".venv" / "bin"
# The tour's own start takes most of it (Spark's JVM on two busy cores).
TIMEOUT_S = 600.0

# What a user does next, in the tour's shell: its pipeline runs in the background.
SECOND_CONSUMER = """\
# A second consumer of the same topic, by mistake: refused, naming the first.
if collection-manager consumer run 2> "$SESSION_DIR/second-consumer.txt"; then
    echo "a second consumer ran"; exit 1
fi
"""
# A replica of one's own through the embedded API (docs/howto/sources.md), its rows read
# while it runs.
EMBEDDED = """\
python - <<'EOF'
import json, subprocess, time
from producers.embedded import EmbeddedReplica
from producers.sources.plugin import SourceCollection, field

columns = (field("query", "string"), field("p99_ms", "double"))
with EmbeddedReplica("replica-7", [SourceCollection("query_latency", columns)]) as replica:
    replica.set_rows("query_latency", [("q1", 12.5), ("q2", 3.0)])
    query = ["collection-manager", "collections", "query", "query_latency", "--format", "json"]
    for _ in range(60):  # the rows go out at the agent's next step: status --wait, again
        subprocess.run(["collection-manager", "status", "--wait"], check=True, capture_output=True)
        answer = json.loads(subprocess.run(query, check=True, capture_output=True).stdout)
        rows = sorted((r["row"]["query"], r["row"]["p99_ms"]) for r in answer["rows"])
        if rows:
            break
        time.sleep(0.5)
    print("embedded rows:", rows)
EOF
"""
COUNT_BUCKETED = """\
collection-manager status --wait > /dev/null
rows=$(collection-manager collections query big_sizes --format tsv --no-headers | wc -l)
echo "bucketed rows: $rows"
"""


def after_tour() -> str:
    """What the session does after the tour: the second consumer, the embedded API, and
    docs/howto/buckets.md's bucketed collection, created and written by its raw producer
    as the page has them."""
    page = fences((ROOT / "docs" / "howto" / "buckets.md").read_text())
    create = next(f.code for f in page if f.language == "sh" and "create big_sizes" in f.code)
    produce = next(f.code for f in page if f.language == "python" and "messages_for" in f.code)
    produced = f"python - <<'EOF'\n{produce}EOF\n"
    return SECOND_CONSUMER + EMBEDDED + create + produced + COUNT_BUCKETED


READY_LINES = (
    re.compile(r"^consumer running: cm\.requests from \S+ into redis://", re.MULTILINE),
    re.compile(r"^controller: leases of \d+ ms", re.MULTILINE),
    re.compile(r"^replica r1 running at epoch \d+", re.MULTILINE),
    re.compile(r"^replica r2 running at epoch \d+", re.MULTILINE),
)
# What a reader must not meet: a traceback, a Java stack frame, a warning of a library.
NOT_OURS = re.compile(r"Traceback \(most recent call last\)|^\s+at [\w$.]+\(|\bWARN", re.MULTILINE)


def tour_blocks(readme: str) -> list[str]:
    """The README's tour: its block marked ``session`` and the ``continues`` after it."""
    blocks: list[str] = []
    for fence in fences(readme):
        if fence.marking is None or fence.marking.startswith("illustration"):
            continue
        marking = parse_marking(fence.marking)
        if marking.session or (blocks and marking.continues):
            blocks.append(fence.code)
        elif blocks:
            break
    return blocks


@pytest.mark.timeout(TIMEOUT_S + 120)
def test_a_second_session_after_the_demo_meets_nothing_but_the_products_own_lines(
    tmp_path: Path,
) -> None:
    # A short state directory, as a user's is: under pytest's long temporary path Spark's
    # Python workers could not use Unix sockets, and the consumer would say so (a warning).
    state = Path(tempfile.mkdtemp(prefix="cm-session-"))
    blocks = tour_blocks((ROOT / "README.md").read_text())
    assert len(blocks) >= 2, "the README's tour is marked session, continued to its end"
    script = "".join(blocks[:-1]) + after_tour() + blocks[-1]
    env = {k: v for k, v in os.environ.items() if k not in ("CM_KAFKA_BOOTSTRAP", "CM_REDIS_URL")}
    env.update(
        PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}",
        CM_STATE_DIR=str(state),
        SESSION_DIR=str(tmp_path),
    )
    example = Example("README.md (second session)", 1, "sh", script)
    try:
        outcome = run(example, env=env, cwd=ROOT, workdir=tmp_path / "session", timeout=TIMEOUT_S)
    finally:
        run(  # whatever a failure left running in the session's own state directory
            Example("cleanup", 1, "sh", "collection-manager infra down\n"),
            env=env,
            cwd=ROOT,
            workdir=tmp_path / "cleanup",
            timeout=120,
        )
        shutil.rmtree(state, ignore_errors=True)
    output = outcome.output
    assert outcome.returncode == 0, output[-6000:]
    for ready in READY_LINES:
        assert ready.search(output), f"no ready line {ready.pattern!r}:\n{output[-6000:]}"
    refused = (tmp_path / "second-consumer.txt").read_text().splitlines()
    assert len(refused) == 1, refused
    assert refused[0].startswith("error: a consumer of topic cm.requests already runs"), refused
    assert re.search(r"pid \d+", refused[0]), refused
    assert "embedded rows: [('q1', 12.5), ('q2', 3.0)]" in output, output[-6000:]
    assert "bucketed rows: 8" in output, output[-6000:]
    assert NOT_OURS.findall(output) == [], output[-6000:]
