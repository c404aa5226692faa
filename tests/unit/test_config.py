"""Settings helpers of collection_manager.config (no services)."""

from __future__ import annotations

import pytest

from collection_manager.config import redact_url


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("redis://:s3cret@127.0.0.1:6379/0", "redis://:***@127.0.0.1:6379/0"),
        ("redis://ops:s3cret@redis.internal:6379", "redis://ops:***@redis.internal:6379"),
        ("redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"),
    ],
)
def test_urls_in_logs_hide_passwords(url: str, shown: str) -> None:
    assert redact_url(url) == shown
