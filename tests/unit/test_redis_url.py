"""A Redis URL of another scheme is one error line that names the setting and the schemes
redis-py takes, never a traceback, and never shows the URL's password."""

from __future__ import annotations

import time

import pytest
import redis

from collection_manager.cli.main import main
from collection_manager.config.errors import ConfigError
from collection_manager.storage.client import node_urls, patiently, redis_client


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


def test_a_url_of_several_hosts_names_each_node_with_the_same_user_and_options() -> None:
    assert node_urls("rediss://u:pw@10.0.0.1:7000,10.0.0.2:7001/0?ssl_cert_reqs=none") == [
        "rediss://u:pw@10.0.0.1:7000/0?ssl_cert_reqs=none",
        "rediss://u:pw@10.0.0.2:7001/0?ssl_cert_reqs=none",
    ]
    assert node_urls("redis://127.0.0.1:6379/0") == ["redis://127.0.0.1:6379/0"]


def test_a_bad_port_among_several_hosts_is_one_error_without_the_password() -> None:
    with pytest.raises(ConfigError) as error:
        redis_client("redis://:pw@127.0.0.1:1,127.0.0.1:notaport/0")
    assert "pw" not in str(error.value)
    assert "127.0.0.1:notaport" in str(error.value) and "not a valid" in str(error.value)


def test_reads_are_tried_again_through_passing_faults_until_the_timeout() -> None:
    calls: list[float] = []

    def flaky() -> str:
        calls.append(time.monotonic())
        if len(calls) < 3:
            raise redis.ConnectionError("gone")
        return "answer"

    assert patiently(flaky, timeout_s=5, first_pause_s=0.01) == "answer"
    assert len(calls) == 3

    def refused() -> str:
        raise redis.AuthenticationError("wrong password")

    with pytest.raises(redis.AuthenticationError):
        patiently(refused, timeout_s=5)  # not a fault that passes: at once

    def down() -> str:
        raise redis.ConnectionError("still down")

    began = time.monotonic()
    with pytest.raises(redis.ConnectionError, match="still down"):
        patiently(down, timeout_s=0.3, first_pause_s=0.01)
    assert 0.2 < time.monotonic() - began < 2  # it tried until the timeout, then gave up
