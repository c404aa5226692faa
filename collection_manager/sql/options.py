"""The options of the data sources, checked before anything connects."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import TypeVar

import redis

from collection_manager.config import InfraConfig, from_env, redact_url
from collection_manager.config.services import running
from collection_manager.core.errors import CollectionManagerError, InfrastructureError
from collection_manager.core.specs import CollectionSpec
from collection_manager.storage.catalog import Catalog
from collection_manager.storage.client import (
    READ_TIMEOUT_S,
    REDIS_FAULTS,
    any_node_answers,
    connected_client,
    patiently,
)

URL_OPTION = "redis.url"
TIMEOUT_OPTION = "timeout"
MAX_PARTS = 64

T = TypeVar("T")


class OptionError(CollectionManagerError):
    """An option of a read is missing or out of its bounds."""


def option(options: Mapping[str, str], name: str) -> str | None:
    """Option ``name`` whatever its case, as Spark's own options are (``startingTime``
    arrives as ``startingtime``)."""
    wanted = name.lower()
    return next((value for key, value in options.items() if key.lower() == wanted), None)


@dataclasses.dataclass(frozen=True)
class Connection:
    """Which Redis, and which collection in it, and how long a read tries again while
    Redis fails over (``timeout_s``, as ``collections query --timeout``). Picklable: it
    travels to the executors."""

    url: str
    collection: str
    timeout_s: float = READ_TIMEOUT_S

    @classmethod
    def of(cls, options: Mapping[str, str]) -> Connection:
        """From a read's options: ``load("<collection>")``, ``timeout`` and ``redis.url``;
        without it, the Redis the CLI would use (``CM_REDIS_URL``, else the one ``infra up``
        started).
        """
        collection = option(options, "path")
        if not collection:
            raise OptionError('no collection given: load("<collection>")')
        timeout_s = seconds(options, TIMEOUT_OPTION, READ_TIMEOUT_S)
        return cls(option(options, URL_OPTION) or _redis_of_the_cli(), collection, timeout_s)

    def client(self) -> redis.Redis:
        """A client of the Redis that answered (one per task: clients do not travel)."""
        return connected_client(self.url, socket_timeout=30)

    def unreachable(self, exc: Exception) -> InfrastructureError:
        """The one error of a Redis that does not answer (the URL without its password)."""
        return InfrastructureError(f"Redis at {redact_url(self.url)} does not answer: {exc}")

    def read(self, call: Callable[[redis.Redis], T]) -> T:
        """``call`` with a client of its own, called again from the start while Redis fails
        over (a node loading, a slot without a primary yet) for up to ``timeout_s``, as
        ``collections query --timeout`` does (``storage/client.patiently``); when no node answers at
        all, it fails at once.

        Raises:
            InfrastructureError: when Redis does not answer (the URL without its password).
        """

        def attempt() -> T:
            client = self.client()
            try:
                return call(client)
            finally:
                client.close()

        return self.patiently(attempt)

    def patiently(self, attempt: Callable[[], T]) -> T:
        """``attempt()``, again while Redis fails over (see ``read``)."""
        try:
            return patiently(attempt, self.timeout_s, answers=lambda: any_node_answers(self.url))
        except REDIS_FAULTS as exc:
            raise self.unreachable(exc) from None

    def spec(self) -> CollectionSpec:
        """The collection's definition.

        Raises:
            UnknownCollectionError: when there is no such collection.
            InfrastructureError: when Redis does not answer.
        """
        return self.read(lambda client: Catalog(client).spec(self.collection))


class KeptClient:
    """A client kept between reads (the driver's, which Spark asks for offsets often),
    opened again after a fault; each read as ``Connection.read``."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection
        self._client: redis.Redis | None = None

    def read(self, call: Callable[[redis.Redis], T]) -> T:
        """``call`` with the kept client, again while Redis fails over."""

        def attempt() -> T:
            if self._client is None:
                self._client = self._connection.client()
            try:
                return call(self._client)
            except BaseException:
                self.close()  # a fault may leave it mid-reply: the next try opens another
                raise

        return self._connection.patiently(attempt)

    def __getstate__(self) -> dict[str, object]:
        return {"_connection": self._connection, "_client": None}  # a client does not travel

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


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


def seconds(options: Mapping[str, str], name: str, default: float) -> float:
    """Option ``name`` as seconds, 0 or more."""
    raw = option(options, name)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):  # also refuses nan
        raise OptionError(f"option {name} must be 0 or more seconds, not {raw!r}")
    return value


def flag(options: Mapping[str, str], name: str, default: bool) -> bool:
    """Option ``name`` as true/false."""
    raw = option(options, name)
    if raw is None:
        return default
    if raw.lower() not in ("true", "false"):
        raise OptionError(f"option {name} must be true or false, not {raw!r}")
    return raw.lower() == "true"
