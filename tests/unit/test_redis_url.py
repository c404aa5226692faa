"""A Redis URL of another scheme is one error line that names the setting and the schemes
redis-py takes, never a traceback, and never shows the URL's password."""

from __future__ import annotations

import pytest

from collection_manager.cli.main import main
from collection_manager.config.errors import ConfigError
from collection_manager.storage.client import redis_client


def test_a_url_of_another_scheme_is_refused_before_connecting() -> None:
    with pytest.raises(ConfigError) as error:
        redis_client("http://user:secret@127.0.0.1:1/0")
    assert str(error.value) == (
        "http://user:***@127.0.0.1:1/0 is not a Redis URL (CM_REDIS_URL): it must start "
        "with redis://, rediss://, unix://"
    )


def test_status_with_such_a_url_prints_one_line_and_exits_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CM_REDIS_URL", "http://127.0.0.1:1")
    assert main(["status"]) == 1
    out, err = capsys.readouterr()
    assert err == (
        "error: http://127.0.0.1:1 is not a Redis URL (CM_REDIS_URL): it must start with "
        "redis://, rediss://, unix://\n"
    )
    assert "Traceback" not in out + err


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("redis://:pw@127.0.0.1:notaport", "redis://:***@127.0.0.1:notaport is not a valid"),
        ("redis://:pw@[::1", "(a URL that cannot be parsed) is not a valid Redis URL"),
    ],
)
def test_a_malformed_redis_url_is_one_error_without_its_password(url: str, shown: str) -> None:
    with pytest.raises(ConfigError) as error:
        redis_client(url)
    assert str(error.value).startswith(shown)
    assert "pw" not in str(error.value)
