"""The options of the data sources, checked before anything connects."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import redis

from collection_manager.config import InfraConfig, from_env, redact_url
from collection_manager.config.services import running
from collection_manager.core.errors import CollectionManagerError, InfrastructureError
from collection_manager.core.specs import CollectionSpec
from collection_manager.storage.client import REDIS_FAULTS, connected_client
from collection_manager.storage.store import RedisStore

URL_OPTION = "redis.url"
MAX_PARTS = 64


class OptionError(CollectionManagerError):
    """An option of a read is missing or out of its bounds."""


def option(options: Mapping[str, str], name: str) -> str | None:
    """Option ``name`` whatever its case, as Spark's own options are (``startingTime``
    arrives as ``startingtime``)."""
    wanted = name.lower()
    return next((value for key, value in options.items() if key.lower() == wanted), None)


@dataclasses.dataclass(frozen=True)
class Connection:
    """Which Redis, and which collection in it. Picklable: it travels to the executors."""

    url: str
    collection: str

    @classmethod
    def of(cls, options: Mapping[str, str]) -> Connection:
        """From a read's options: ``load("<collection>")`` and ``redis.url``; without it,
        the Redis the CLI would use (``CM_REDIS_URL``, else the one ``infra up`` started).
        """
        collection = option(options, "path")
        if not collection:
            raise OptionError('no collection given: load("<collection>")')
        return cls(option(options, URL_OPTION) or _redis_of_the_cli(), collection)

    def client(self) -> redis.Redis:
        """A client of the Redis that answered (one per task: clients do not travel)."""
        return connected_client(self.url, socket_timeout=30)

    def unreachable(self, exc: Exception) -> InfrastructureError:
        """The one error of a Redis that does not answer (the URL without its password)."""
        return InfrastructureError(f"Redis at {redact_url(self.url)} does not answer: {exc}")

    def spec(self) -> CollectionSpec:
        """The collection's definition.

        Raises:
            UnknownCollectionError: when there is no such collection.
            InfrastructureError: when Redis does not answer.
        """
        client = self.client()
        try:
            return RedisStore(client).spec(self.collection)
        except REDIS_FAULTS as exc:
            raise self.unreachable(exc) from None
        finally:
            client.close()


def _redis_of_the_cli() -> str:
    # Resolved where the CLI resolves it, so that an example run beside `infra up` needs no
    # option; the error stays one line, naming the option too.
    try:
        return running(from_env(InfraConfig), needs=("redis",)).redis_url
    except InfrastructureError as exc:
        raise OptionError(f"{exc}, or give option {URL_OPTION}") from None


def bounded_int(options: Mapping[str, str], name: str, low: int, high: int) -> int | None:
    """Option ``name`` as an int in ``[low, high]``, or None when not given."""
    raw = option(options, name)
    if raw is None:
        return None
    try:
        value = int(raw)
    except ValueError:
        raise OptionError(f"option {name} must be a whole number, not {raw!r}") from None
    if not low <= value <= high:
        raise OptionError(f"option {name} must be from {low} to {high}, not {value}")
    return value


def flag(options: Mapping[str, str], name: str, default: bool) -> bool:
    """Option ``name`` as true/false."""
    raw = option(options, name)
    if raw is None:
        return default
    if raw.lower() not in ("true", "false"):
        raise OptionError(f"option {name} must be true or false, not {raw!r}")
    return raw.lower() == "true"
