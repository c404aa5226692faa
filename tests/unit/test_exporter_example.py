"""The openmetrics example of docs/howto/sources.md takes the Redis that ``infra up`` started
on the port it picked, not an assumed 6379: its ``redis_url=$(...)`` line, run by a shell,
gives the recorded URL. No services: ``infra status`` reads the record (a Redis that does
not answer still has its address), which names this test's own process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from collection_manager.config import InfraConfig
from collection_manager.config.services import Service, save_services, start_time

ROOT = Path(__file__).resolve().parents[2]
RECORDED = "redis://127.0.0.1:6401/0"


def _address_line() -> str:
    text = (ROOT / "docs/howto/sources.md").read_text()
    block = text[text.index("prometheus-redis-exporter -redis.addr") - 1000 :]
    block = block[: block.index("prometheus-redis-exporter -redis.addr")]
    (line,) = [line for line in block.splitlines() if line.startswith("redis_url=$(")]
    return line


def test_the_exporter_example_scrapes_the_redis_of_infra_up(tmp_path: Path) -> None:
    pid = os.getpid()
    service = Service("redis", pid, RECORDED, "redis.log", "redis-server", start_time(pid))
    save_services(InfraConfig(state_dir=tmp_path).services_file, {"redis": service})
    env = {k: v for k, v in os.environ.items() if k != "CM_REDIS_URL"}
    env.update(CM_STATE_DIR=str(tmp_path), PATH=f"{Path(sys.executable).parent}:{env['PATH']}")
    done = subprocess.run(
        ["bash", "-c", f'{_address_line()}\nprintf %s "$redis_url"'],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, RECORDED, "")
    text = (ROOT / "docs/howto/sources.md").read_text()
    assert "-redis.addr redis://127.0.0.1:6379" not in text
