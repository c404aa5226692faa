"""The store's layout version: which keys and encodings a Redis holds (docs/concepts/upgrades.md).

A layout is everything a process must agree on to read or write the collections: key
names and hash tags (``keys.py``), what each key holds, the catalog's records and the
progress records. Redis records its layout in one key, ``cm:layout``; a process serves
the layouts in ``SERVED`` and refuses any other with one line naming both. Releases before
the key was recorded (0.1.0) wrote layout 1, so a Redis without the key holds layout 1.

Only a process that loads the store's functions (``consumer run``, ``functions load``) records
the layout, and only where none is recorded: readers and agents never write it.
"""

from __future__ import annotations

import redis

from collection_manager import release
from collection_manager.storage.client import as_text
from collection_manager.storage.errors import LayoutError

LAYOUT_KEY = "cm:layout"
# The layout this version writes, and those it can read and write.
LAYOUT = 1
SERVED = frozenset({1})
# What a Redis without the key holds: the layout of 0.1.0, which did not record it.
UNRECORDED = 1


def stored_layout(client: redis.Redis) -> int | str:
    """The layout Redis records (``UNRECORDED`` when none is), or its raw text if no number."""
    raw = client.get(LAYOUT_KEY)
    if raw is None:
        return UNRECORDED
    text = as_text(raw)
    return int(text) if text.isdigit() else text


def check_layout(client: redis.Redis) -> int:
    """The stored layout, when this version serves it.

    Raises:
        LayoutError: naming the stored layout and those this version serves.
    """
    stored = stored_layout(client)
    if isinstance(stored, int) and stored in SERVED:
        return stored
    served = ", ".join(str(layout) for layout in sorted(SERVED))
    raise LayoutError(
        f"Redis holds store layout {stored}, which collection-manager {release.version()} "
        f"cannot serve (it serves layout {served}): use a release that serves layout "
        f"{stored} (CHANGELOG.md, Upgrading)"
    )


def record_layout(client: redis.Redis) -> int:
    """Records this version's layout where Redis records none; then checks what is stored.

    Raises:
        LayoutError: when Redis holds a layout this version does not serve.
    """
    client.set(LAYOUT_KEY, LAYOUT, nx=True)
    return check_layout(client)
