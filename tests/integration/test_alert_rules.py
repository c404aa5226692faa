"""The shipped alert rules (docker/prometheus/alerts.yml) are valid, each has tests, and
the tests pass, as Prometheus' own ``promtool`` runs them (``collection-manager setup``
installs Debian's prometheus package, which has it)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

RULES = Path(__file__).parents[2] / "docker" / "prometheus"


def _promtool(*args: str) -> str:
    promtool = shutil.which("promtool")
    assert promtool, "promtool is missing: `make setup` installs Debian's prometheus package"
    done = subprocess.run([promtool, *args], cwd=RULES, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_the_alert_rules_are_valid() -> None:
    assert "SUCCESS" in _promtool("check", "rules", "alerts.yml")


def test_every_alert_has_tests_and_they_pass() -> None:
    alerts = set(re.findall(r"^\s+- alert: (\w+)$", (RULES / "alerts.yml").read_text(), re.M))
    tested = set(re.findall(r"alertname: (\w+)$", (RULES / "alerts_test.yml").read_text(), re.M))
    assert alerts and alerts == tested
    assert "SUCCESS" in _promtool("test", "rules", "alerts_test.yml")
