"""``redis-cli`` run against a local node, as a Redis Cluster's administration needs it
(``--cluster create`` and ``reshard``, ``CLUSTER NODES``, ``INFO``, ``MYID``): its failures
and timeouts as ``InfrastructureError``s."""

from __future__ import annotations

import shutil
import subprocess

from collection_manager.core.errors import InfrastructureError
from collection_manager.devservices.processes import LOOPBACK


def redis_cli(*args: str, timeout_s: float = 30.0) -> str:
    """What ``redis-cli -h <loopback> args...`` prints, once it succeeded."""
    binary = shutil.which("redis-cli")
    if binary is None:
        raise InfrastructureError("redis-cli was not found (Debian: apt-get install redis-tools)")
    what = f"redis-cli {' '.join(args[:3])}"
    try:
        done = subprocess.run(
            [binary, "-h", LOOPBACK, *args], capture_output=True, text=True, timeout=timeout_s
        )
    except subprocess.TimeoutExpired:
        raise InfrastructureError(f"{what} did not end within {timeout_s:.0f} s") from None
    if done.returncode != 0:
        # --cluster reports its errors on stdout, the rest on stderr.
        raise InfrastructureError(f"{what} failed: {(done.stdout + done.stderr)[-500:]}")
    return done.stdout
