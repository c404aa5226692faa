"""The CLI's one-line errors: what they say, and that no password gets through."""

from __future__ import annotations

import pytest
import redis
from confluent_kafka import KafkaError, KafkaException

from collection_manager.cli.faults import causes, describe, redact
from collection_manager.cli.main import main
from collection_manager.core.errors import InfrastructureError


def test_redact_masks_the_password_of_every_url_in_a_text() -> None:
    text = "a redis://:s3cret@h:1/0 and rediss://user:pw@h2:2 and kafka h:9092"
    assert redact(text) == "a redis://:***@h:1/0 and rediss://user:***@h2:2 and kafka h:9092"


def test_a_redis_fault_is_one_line_naming_the_setting_to_check() -> None:
    line = describe(redis.ConnectionError("Error 111 connecting to redis://:pw@h:1/0"))
    assert line.startswith("Redis stopped answering (ConnectionError: Error 111")
    assert "CM_REDIS_URL" in line
    assert "pw" not in line
    assert "\n" not in line


def test_a_kafka_fault_is_one_line_naming_the_setting_to_check() -> None:
    line = describe(KafkaException(KafkaError(KafkaError._TRANSPORT, "broker down")))
    assert line.startswith("Kafka failed")
    assert "CM_KAFKA_BOOTSTRAP" in line


def test_causes_follow_the_chain_redacted() -> None:
    try:
        try:
            raise OSError("connect to redis://:pw@h:1/0 refused")
        except OSError as exc:
            raise InfrastructureError("no Redis") from exc
    except InfrastructureError as caught:
        assert causes(caught) == ["caused by OSError: connect to redis://:***@h:1/0 refused"]


def test_a_bad_argument_is_one_error_line_and_the_help_to_read(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["collections", "tail", "error_counts", "--since", "-5"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [
        "error: argument --since: times start at 0, not -5",
        "see: collection-manager collections tail --help",
    ]


@pytest.mark.parametrize(
    "command",
    ["collections query", "collections tail", "status", "consumer run", "replicas", "setup"],
)
def test_every_help_opens_with_what_the_command_does(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main([*command.split(), "--help"])
    out = capsys.readouterr().out
    description = out.split("\n\n")[1]
    assert not description.startswith(("positional", "options")), out
    assert '"""' not in out
