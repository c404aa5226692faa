"""``consume`` as a new user first starts it: a ready line with its listener's real
address (a metrics port of 0 picks any), and no warning on a healthy first start (its
dead-letter topic does not exist yet: normal), not even Spark's."""

from __future__ import annotations

import re
import signal
from pathlib import Path
from typing import Any

from tests.integration.consumer_process import consumer_env, kill, start_consumer
from tests.support import assert_eventually, http_get

READY = re.compile(
    r"^consumer running: (\S+) from (\S+) into (\S+); metrics and health at (http://\S+)$",
    re.MULTILINE,
)
# Lines a healthy start and stop must not print: a warning of ours (Python logging's
# format: date, time, level), Spark's loopback-hostname notice, its complaint at shutdown.
NOISE = re.compile(
    r"^\d{4}-\d\d-\d\d \S+ WARNING |resolves to a loopback address|Failed to cancel job group"
)


def test_consume_prints_its_ready_line_with_the_real_address_and_no_warning(
    kafka: str, endpoints: Any, unique: str, tmp_path: Path
) -> None:
    topic, log = f"ready-{unique}", tmp_path / "consumer.log"
    env = consumer_env(kafka, endpoints.redis_url, topic, tmp_path)
    env.update(CM_CONSUMER_METRICS_ADDRESS="127.0.0.1:0", CM_CREATE_TOPIC="true")
    consumer = start_consumer(env, log)
    try:

        def ready() -> re.Match[str]:
            assert consumer.poll() is None, log.read_text()[-3000:]
            found = READY.search(log.read_text())
            assert found is not None
            return found

        line = assert_eventually(ready, timeout=180, interval=0.2)
        assert line.group(1, 2) == (topic, kafka)
        url = line.group(4)
        assert not url.endswith(":0"), url
        assert http_get(f"{url}/healthz")[0] == 200
        consumer.send_signal(signal.SIGTERM)
        assert consumer.wait(60) == 0, log.read_text()[-3000:]
    finally:
        if consumer.poll() is None:
            kill(consumer)
    output = log.read_text()
    assert len(READY.findall(output)) == 1
    assert [line for line in output.splitlines() if NOISE.search(line)] == []
    assert "Traceback" not in output
