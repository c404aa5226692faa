"""CM_LOG_FORMAT: the JSON line of a log record, and the CLI's last line in either format."""

from __future__ import annotations

import json
import logging
import sys

import pytest

from collection_manager.cli.main import main
from collection_manager.config import LogConfig, from_env
from collection_manager.config.errors import ConfigError
from collection_manager.observability.logs import JsonLines, json_line, utc_iso


def _record(message: str, *args: object, **extra: object) -> logging.LogRecord:
    record = logging.LogRecord("cm.test", logging.WARNING, __file__, 1, message, args, None)
    record.__dict__.update(extra)
    return record


def test_a_record_is_one_json_object_with_its_context() -> None:
    line = JsonLines().format(_record("batch %d refused", 7, replica="r1", offsets={0: 3}))
    assert "\n" not in line
    parsed = json.loads(line)
    assert parsed["level"] == "WARNING" and parsed["logger"] == "cm.test"
    assert parsed["message"] == "batch 7 refused"
    assert parsed["replica"] == "r1" and parsed["offsets"] == {"0": 3}
    assert parsed["time"].endswith("Z") and isinstance(parsed["pid"], int)


def test_an_exception_and_a_value_json_cannot_hold_stay_on_one_line() -> None:
    try:
        raise ValueError("bad\nvalue")
    except ValueError:
        record = _record("failed", where=object())
        record.exc_info = sys.exc_info()
    parsed = json.loads(JsonLines().format(record))
    assert "ValueError: bad" in parsed["exception"]
    assert parsed["where"].startswith("<object object")


def test_another_programs_line_becomes_a_json_line_of_its_own() -> None:
    line = json_line('said "hi"\tthere', "spark.stderr")
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert json.loads(line)["message"] == 'said "hi"\tthere'


def test_times_are_utc_with_milliseconds() -> None:
    assert utc_iso(0.5) == "1970-01-01T00:00:00.500Z"


def test_a_log_format_that_is_none_of_the_two_is_refused_naming_them() -> None:
    with pytest.raises(ConfigError, match=r"CM_LOG_FORMAT='xml' is none of text, json"):
        from_env(LogConfig, {"CM_LOG_FORMAT": "xml"})


def test_the_cli_ends_with_one_json_line_when_logs_are_json(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CM_LOG_FORMAT", "json")
    monkeypatch.setenv("CM_REDIS_URL", "redis://127.0.0.1:1")  # nothing answers there
    monkeypatch.setenv("CM_KAFKA_BOOTSTRAP", "127.0.0.1:1")
    assert main(["collections", "list"]) == 1
    (line,) = capsys.readouterr().err.splitlines()
    parsed = json.loads(line)
    assert parsed["level"] == "ERROR" and parsed["message"].startswith("error: ")


def test_the_cli_refuses_an_unknown_log_format_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CM_LOG_FORMAT", "xml")
    assert main(["collections", "list"]) == 2
    assert capsys.readouterr().err == "error: CM_LOG_FORMAT='xml' is none of text, json\n"
