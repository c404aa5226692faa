"""The defaults the docs quote for ``CM_*`` settings are the code's (``tests/docs/settings.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.docs.settings import defaults, docs_problems, page_problems

KNOWN: dict[str, list[tuple[str, Any]]] = {
    "CM_ROW_TTL_MS": [("row_ttl_ms", 6_000)],
    "CM_MAX_REQUEST_BYTES": [("max_request_bytes", 1_048_576)],
    "CM_TOPIC": [("topic", "cm.requests")],
    "CM_FAIL_ON_DATA_LOSS": [("fail_on_data_loss", False)],
    "CM_HTTP_MAX_ROWS": [("http_max_rows", 10_000)],
    "CM_STARTUP_TIMEOUT_S": [("startup_timeout_s", 90.0)],
    "CM_CHECKPOINT_DIR": [("checkpoint_dir", None)],
    "CM_CACHE_DIR": [("cache_dir", Path("/nonexistent-home-of-the-config-reference/.cache/cm"))],
}


@pytest.mark.parametrize(
    "line",
    [
        "`CM_HTTP_MAX_ROWS` (default 10,000)",
        "rows (`CM_HTTP_MAX_ROWS`, default 10,000 rows) at most",
        "`CM_ROW_TTL_MS` (default 6 s, at least 4 step intervals)",
        "`CM_ROW_TTL_MS` (default 6000)",
        "`CM_MAX_REQUEST_BYTES`, default 1 MiB.",
        "the topic (`CM_TOPIC`, default `cm.requests`)",
        "`CM_FAIL_ON_DATA_LOSS=false` (the default) keeps going",
        "`CM_FAIL_ON_DATA_LOSS=0`, the default, keeps going",
        "`CM_STARTUP_TIMEOUT_S` defaults to 1.5 min.",
        "`CM_CHECKPOINT_DIR` (default unset: `<state dir>/checkpoints`)",
        "`CM_CHECKPOINT_DIR`, default `<state dir>/checkpoints`",
        "`CM_CACHE_DIR` (default `~/.cache/cm`)",
        "`CM_ROW_TTL_MS` (default: the step interval's four)",
        "`CM_ROW_TTL_MS` (default\n6 s)",
    ],
)
def test_a_quoted_default_that_is_the_codes_passes(line: str) -> None:
    assert page_problems("p.md", line + "\n", KNOWN) == []


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        (
            "`CM_HTTP_MAX_ROWS` (default 1,000)",
            "CM_HTTP_MAX_ROWS defaults to `10000` in the code, not '1,000'",
        ),
        (
            "`CM_ROW_TTL_MS` (default 5 s)",
            "CM_ROW_TTL_MS defaults to `6000` in the code, not '5 s'",
        ),
        (
            "`CM_MAX_REQUEST_BYTES`, default 2 MiB",
            "CM_MAX_REQUEST_BYTES defaults to `1048576` in the code, not '2 MiB'",
        ),
        (
            "(`CM_TOPIC`, default `cm.old`)",
            "CM_TOPIC defaults to `cm.requests` in the code, not '`cm.old`'",
        ),
        (
            "`CM_FAIL_ON_DATA_LOSS=true` (default)",
            "CM_FAIL_ON_DATA_LOSS defaults to `false` in the code, not 'true'",
        ),
        (
            "`CM_STARTUP_TIMEOUT_S` defaults to 60 s.",
            "CM_STARTUP_TIMEOUT_S defaults to `90.0` in the code, not '60 s'",
        ),
        (
            "`CM_CHECKPOINT_DIR` (default `/tmp/x`)",
            "CM_CHECKPOINT_DIR defaults to unset in the code, not '`/tmp/x`'",
        ),
        ("`CM_GONE` (default 3)", "CM_GONE is no setting (collection_manager/config/)"),
        (
            "`CM_ROW_TTL_MS` (default\n7 s)",
            "CM_ROW_TTL_MS defaults to `6000` in the code, not '7 s'",
        ),
    ],
)
def test_a_quoted_default_that_differs_is_named_with_the_codes(line: str, problem: str) -> None:
    assert page_problems("p.md", line + "\n", KNOWN) == [f"p.md:1: {problem}"]


def test_code_blocks_and_generated_blocks_are_not_read() -> None:
    page = (
        "```sh\n`CM_ROW_TTL_MS` (default 5 s)\n```\n<!-- x:start -->\nCM_ROW_TTL_MS=1 (default)\n"
    )
    page += "<!-- x:end -->\n"

    assert page_problems("p.md", page, KNOWN) == []


def test_the_defaults_are_the_config_classes() -> None:
    known = defaults()

    assert known["CM_TOPIC"] == [("topic", "cm.requests")]
    assert known["CM_CACHE_DIR"][0][1].parts[-2:] == (".cache", "collection-manager")


def test_the_docs_quote_the_codes_defaults() -> None:
    assert docs_problems() == []
