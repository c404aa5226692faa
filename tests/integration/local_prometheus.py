"""A real Prometheus (Debian's package, as ``collection-manager setup`` installs it) as a
local process of one test: it scrapes the given targets every second and evaluates the
shipped alert rules, with their ``for`` durations shortened so a test need not wait
minutes (``promtool test rules`` checks the real durations)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from collection_manager.devservices.processes import free_port, stop_pid
from tests.support import assert_eventually

RULES = Path(__file__).parents[2] / "docker" / "prometheus" / "alerts.yml"


class LocalPrometheus:
    """Prometheus scraping ``jobs`` (job name -> host:port targets) from ``directory``."""

    def __init__(self, directory: Path, jobs: Mapping[str, Sequence[str]]) -> None:
        binary = shutil.which("prometheus")
        assert binary, "prometheus is missing: `make setup` installs Debian's package"
        directory.mkdir(parents=True, exist_ok=True)
        rules = re.sub(r"for: \d+m", "for: 2s", RULES.read_text())
        (directory / "alerts.yml").write_text(rules)
        scrapes = [
            {"job_name": job, "static_configs": [{"targets": list(targets)}]}
            for job, targets in jobs.items()
        ]
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(directory / "alerts.yml")],
            "scrape_configs": scrapes,
        }
        (directory / "prometheus.yml").write_text(json.dumps(config))  # YAML reads JSON
        self.url = f"http://127.0.0.1:{free_port()}"
        self._log = open(directory / "prometheus.log", "ab")  # noqa: SIM115 (closed in stop)
        self._process = subprocess.Popen(
            [
                binary,
                f"--config.file={directory / 'prometheus.yml'}",
                f"--storage.tsdb.path={directory / 'data'}",
                f"--web.listen-address={self.url.removeprefix('http://')}",
            ],
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        try:
            assert_eventually(self._ready, timeout=60, interval=0.2)
        except BaseException:
            self.stop()  # never left running after a failed start
            raise

    def _ready(self) -> None:
        assert self._process.poll() is None, "prometheus exited; see prometheus.log"
        try:
            with urllib.request.urlopen(self.url + "/-/ready", timeout=2) as reply:
                assert reply.status == 200
        except OSError as exc:  # not listening yet, or 503 while it starts
            raise AssertionError(f"prometheus is not ready: {exc}") from exc

    def query(self, expression: str) -> list[dict[str, Any]]:
        """The instant vector of ``expression`` now."""
        return list(self._api("query", {"query": expression})["result"])

    def value(self, expression: str) -> float | None:
        """The single value of ``expression`` now, or None when it has none."""
        result = self.query(expression)
        assert len(result) <= 1, result
        return float(result[0]["value"][1]) if result else None

    def firing(self) -> set[str]:
        """The names of the alerts that fire now."""
        alerts = self._api("alerts", {})["alerts"]
        return {a["labels"]["alertname"] for a in alerts if a["state"] == "firing"}

    def _api(self, path: str, params: Mapping[str, str]) -> dict[str, Any]:
        url = f"{self.url}/api/v1/{path}?{urllib.parse.urlencode(params)}"
        with urllib.request.urlopen(url, timeout=5) as reply:
            answer = json.load(reply)
        assert answer["status"] == "success", answer
        return dict(answer["data"])

    def stop(self) -> None:
        stop_pid(self._process.pid)
        self._process.wait(30)
        self._log.close()
