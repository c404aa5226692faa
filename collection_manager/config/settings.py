"""How a setting is declared and read: typed, immutable configuration from ``CM_*``
environment variables.

Every setting is a field of a frozen dataclass with a ``help`` text in its metadata
(:func:`setting`), so the configuration reference in the docs can be generated from (and
checked against) the code. The variable of field ``kafka_bootstrap`` is
``CM_KAFKA_BOOTSTRAP``. The config classes live beside this module, a module per group:
``infra`` (InfraConfig, SparkConfig, LogConfig), ``consumer``, ``replica`` and ``serving``
(HttpConfig, SinkConfig).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import types
import typing
import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from collection_manager.config.errors import ConfigError

ENV_PREFIX = "CM_"

T = TypeVar("T")

logger = logging.getLogger(__name__)

# Settings renamed in the current release: the old variable's name -> the new one's. The
# old name is still read for this one release, with a warning (docs/concepts/upgrades.md); a release
# empties the table of the release before it. A setting removed outright maps to None.
RENAMED: Mapping[str, str | None] = {}


def setting(default: Any, help: str) -> Any:
    """Declares a configuration field with its default and a one-line description."""
    return dataclasses.field(default=default, metadata={"help": help})


def env_name(field_name: str) -> str:
    """The environment variable that sets ``field_name``."""
    return ENV_PREFIX + field_name.upper()


def _parse(raw: str, kind: Any, name: str) -> Any:
    if isinstance(kind, types.UnionType) or typing.get_origin(kind) is typing.Union:
        inner = [arg for arg in typing.get_args(kind) if arg is not type(None)]
        return None if raw == "" else _parse(raw, inner[0], name)
    try:
        if kind is Path:
            return Path(raw).expanduser()
        if kind is bool:
            if raw.lower() not in ("1", "true", "yes", "0", "false", "no"):
                raise ValueError(raw)
            return raw.lower() in ("1", "true", "yes")
        return kind(raw)
    except ValueError as exc:
        raise ConfigError(
            f"{name}={raw!r} is not a valid {getattr(kind, '__name__', kind)}"
        ) from exc


def from_env(cls: type[T], environ: Mapping[str, str] | None = None) -> T:
    """Builds a config dataclass from ``CM_*`` variables; unset ones keep their defaults."""
    environ = os.environ if environ is None else environ
    hints = typing.get_type_hints(cls)
    values = {}
    for field in dataclasses.fields(cls):  # type: ignore[arg-type]
        name = env_name(field.name)
        raw = environ[name] if name in environ else _renamed(name, environ)
        if raw is not None:
            values[field.name] = _parse(raw, hints[field.name], name)
    for old in sorted(RENAMED.keys() & environ.keys()):
        if RENAMED[old] is None:
            _warn_once(f"{old} is no setting any more: it is ignored (CHANGELOG.md)")
    return cls(**values)


_warned: set[str] = set()


def _warn_once(message: str) -> None:
    # Each command reads several config classes: one warning per process is enough.
    if message not in _warned:
        _warned.add(message)
        logger.warning("%s", message)


def _renamed(name: str, environ: Mapping[str, str]) -> str | None:
    """The value of the old name of setting ``name``, if it is set (with a warning)."""
    for old, new in RENAMED.items():
        if new == name and old in environ:
            _warn_once(f"{old} is renamed {name}: the old name is read for this release only")
            return environ[old]
    return None


def redact_url(url: str) -> str:
    """``url`` fit for logs: a password in it (``redis://:secret@host``) becomes ``***``.

    A URL too broken to tell where a password would be is not shown at all.
    """
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return "(a URL that cannot be parsed)"
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.netloc.rpartition("@")[2]
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))
