"""The store the commands read and write: of the configured (or running local) Redis."""

from __future__ import annotations

from collection_manager import devservices
from collection_manager.config import InfraConfig, from_env
from collection_manager.storage.store import RedisStore


def store_from_env(load_functions: bool = False) -> RedisStore:
    """The store of the configured (or running local) Redis; starts nothing.

    Args:
        load_functions: load this version's store functions first, as the commands that
            create collections do (readers never load them: docs/concepts/upgrades.md).
    """
    endpoints = devservices.running(from_env(InfraConfig), needs=("redis",))
    return RedisStore.connect(endpoints.redis_url, load_functions=load_functions)
