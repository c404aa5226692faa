"""The test set-up: what only the tests use, installed once beside ``collection-manager
setup`` (which installs what the product's roles need).

Debian's ``prometheus`` (the server and ``promtool``: the shipped alert rules and the
dashboard's queries are tested against it), ``prometheus-redis-exporter`` (the real
replicas of the real-fleet test) and ``chromium`` (the browser that the console's test
drives through Playwright; Playwright's own browser download is not used), each when it is
missing and this runs as root. ``make test`` runs it: ``python -m tests.setup``.
"""

from __future__ import annotations

from collection_manager.devservices.setup import debian_program

# (Debian package, program, what it is for)
PROGRAMS = (
    ("prometheus", "promtool", "for the alert rules tests"),
    ("prometheus-redis-exporter", "prometheus-redis-exporter", "for the real-fleet test"),
    ("chromium", "chromium", "for the console test"),
)


def prepare() -> list[str]:
    """Installs what is missing; a line per program, saying where it is."""
    return [
        f"{package}: {debian_program(package, program, why)}" for package, program, why in PROGRAMS
    ]


if __name__ == "__main__":
    for line in prepare():
        print(line)
