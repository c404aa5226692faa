"""``serve`` in the test's own process, on a free loopback port, and a reader of its change
streams (Server-Sent Events), for the tests of the HTTP API."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import requests

from collection_manager.config import HttpConfig
from collection_manager.http.service import Service, start


@contextlib.contextmanager
def served(
    redis_url: str,
    kafka: str | None = None,
    topic: str = "cm.requests",
    namespace: str = "cm:replicas",
    **settings: Any,
) -> Iterator[Service]:
    """A running ``serve`` with ``settings`` (HttpConfig's fields), stopped after."""
    config = HttpConfig(**{"http_address": "127.0.0.1:0", **settings})
    service = start(config, redis_url, kafka, topic, namespace)
    try:
        yield service
    finally:
        service.close()


@dataclasses.dataclass(frozen=True)
class Event:
    """One Server-Sent Event: its type, id (None: it set none) and data, parsed as JSON."""

    kind: str
    id: str | None
    data: Any


class EventReader:
    """The events of a change stream, as a browser's EventSource parses them; comments
    (keep-alives) are counted, not returned."""

    def __init__(self, response: requests.Response) -> None:
        self.response = response
        self._lines = response.iter_lines(decode_unicode=True)
        self.comments = 0

    def next(self) -> Event:
        """The next event (blocks until it comes, or the stream's read timeout)."""
        kind, event_id, data = "message", None, []
        for line in self._lines:
            if line == "":
                if data:
                    return Event(kind, event_id, json.loads("\n".join(data)))
                continue
            if line.startswith(":"):
                self.comments += 1
                continue
            name, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if name == "event":
                kind = value
            elif name == "id":
                event_id = value
            elif name == "data":
                data.append(value)
        raise EOFError("the stream ended")

    def close(self) -> None:
        self.response.close()


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key, made by openssl in ``folder``."""
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
            *("-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1"),
            *("-keyout", str(key), "-out", str(cert)),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key
