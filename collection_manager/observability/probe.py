"""``python -m collection_manager.observability.probe [PATH]``: the app image's HEALTHCHECK.

Asks the container's own listener (whichever ``CM_*_METRICS_ADDRESS`` it sets) for
``PATH`` (default ``/healthz``; compose asks ``/readyz``) and exits 0 on 200, else 1 with
the reason. A container that sets none (a one-off command) is healthy while it runs. Only
the standard library: a probe runs every few seconds.
"""

from __future__ import annotations

import os
import sys
import urllib.error
import urllib.request

SETTINGS = (
    "CM_CONSUMER_METRICS_ADDRESS",
    "CM_CONTROLLER_METRICS_ADDRESS",
    "CM_AGENT_METRICS_ADDRESS",
    "CM_HTTP_ADDRESS",  # server run: its /readyz is on the HTTP API's own listener
)


def probe(path: str = "/healthz", env: dict[str, str] | None = None) -> tuple[bool, str]:
    """Whether the listener answers ``path`` with 200, and what it said (or why not)."""
    env = dict(os.environ) if env is None else env
    address = next((env[name] for name in SETTINGS if env.get(name)), None)
    if address is None:
        return True, "no listener configured"
    host, _, port = address.rpartition(":")
    if host in ("", "0.0.0.0", "[::]", "::"):  # listening everywhere: ask loopback
        host = "127.0.0.1"
    try:
        with urllib.request.urlopen(f"http://{host}:{port}{path}", timeout=4) as reply:
            return reply.status == 200, reply.read().decode(errors="replace").strip()
    except urllib.error.HTTPError as error:
        return False, error.read().decode(errors="replace").strip()
    except OSError as exc:
        return False, f"{host}:{port}: {exc}"


def main(argv: list[str]) -> int:
    ok, said = probe(argv[0] if argv else "/healthz")
    print(said)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
