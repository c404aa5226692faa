"""Certificates made by the test, a broker with a SASL_SSL listener and a Redis with TLS
and an ACL user: the secured services users run in production, on loopback."""

from __future__ import annotations

import dataclasses
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from collection_manager.config import InfraConfig
from collection_manager.devservices.kafka_broker import SecuredListener, start_kafka
from collection_manager.devservices.processes import (
    LOOPBACK,
    free_port,
    start_process,
    stop_pid,
    wait_until_ready,
)
from collection_manager.devservices.redis_server import redis_answers, require_redis_server


@dataclasses.dataclass(frozen=True)
class Certificates:
    """A CA, a server certificate for 127.0.0.1 and a client certificate, all PEM."""

    ca: Path
    server_certificate: Path
    server_key: Path
    server_bundle: Path  # key and certificate in one file, as Kafka's PEM keystore takes them
    client_certificate: Path
    client_key: Path


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def make_certificates(home: Path) -> Certificates:
    """Signs a server and a client certificate (EC keys, valid 2 days) with a new CA."""
    home.mkdir(parents=True, exist_ok=True)
    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    _openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
             "-subj", "/CN=collection-manager test CA", cwd=home)  # fmt: skip
    (home / "server.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    for name, extension in (("server", ["-extfile", "server.ext"]), ("client", [])):
        _openssl("req", *ec, "-keyout", f"{name}.key", "-out", f"{name}.csr",
                 "-subj", f"/CN={name}", cwd=home)  # fmt: skip
        signed = ("-out", f"{name}.pem", "-days", "2", *extension)
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                 "-CAcreateserial", *signed, cwd=home)  # fmt: skip
    bundle = home / "server-bundle.pem"
    bundle.write_text((home / "server.key").read_text() + (home / "server.pem").read_text())
    return Certificates(
        home / "ca.pem", home / "server.pem", home / "server.key", bundle,
        home / "client.pem", home / "client.key",
    )  # fmt: skip


@dataclasses.dataclass(frozen=True)
class SecuredKafka:
    """A broker's SASL_SSL address, and its plaintext one for the test's own reads."""

    secured: str
    plaintext: str


@contextmanager
def secured_kafka(
    certificates: Certificates, users: dict[str, str], home: Path
) -> Iterator[SecuredKafka]:
    """A broker whose second listener takes SCRAM-SHA-512 ``users`` with client certificates."""
    listener = SecuredListener(free_port(), certificates.server_bundle, certificates.ca, users)
    service = start_kafka(InfraConfig(state_dir=home), secured=listener)
    try:
        yield SecuredKafka(f"{LOOPBACK}:{listener.port}", service.address)
    finally:
        stop_pid(service.pid)


@contextmanager
def secured_redis(
    certificates: Certificates, user: str, password: str, home: Path
) -> Iterator[str]:
    """A Redis that only speaks TLS (client certificates required) and only knows ``user``;
    yields its ``rediss://`` URL with that user's credentials and the client's files."""
    home.mkdir(parents=True, exist_ok=True)
    port = free_port()
    cmd = [
        require_redis_server(), "--bind", LOOPBACK, "--port", "0", "--tls-port", str(port),
        "--tls-cert-file", str(certificates.server_certificate),
        "--tls-key-file", str(certificates.server_key),
        "--tls-ca-cert-file", str(certificates.ca), "--tls-auth-clients", "yes",
        "--user", "default", "off",
        "--user", user, "on", f">{password}", "~*", "&*", "+@all",
        "--dir", str(home), "--save", "", "--appendonly", "no",
    ]  # fmt: skip
    url = (
        f"rediss://{user}:{password}@{LOOPBACK}:{port}/0?ssl_ca_certs={certificates.ca}"
        f"&ssl_certfile={certificates.client_certificate}&ssl_keyfile={certificates.client_key}"
    )
    log = home / "redis.log"
    pid = start_process(cmd, log, cwd=home)
    try:
        wait_until_ready("the TLS redis-server", pid, log, lambda: redis_answers(url), 60)
        yield url
    finally:
        stop_pid(pid)
