"""How the demo shows itself: plain lines off a terminal, the verdict in words."""

from __future__ import annotations

from collections import Counter

from rich.console import Console

from collection_manager.demo.frames import Frame, ReplicaView
from collection_manager.demo.launch import STOPS_WITH_THE_DEMO
from collection_manager.demo.verify import verify
from collection_manager.demo.view import PlainReporter, render, render_summary


def _frame(phase: str, events: tuple[str, ...]) -> Frame:
    replica = ReplicaView("demo-r1", "survives", "running", 1, "active", 3.0, {"c": 4})
    return Frame(1.0, phase, ("c",), (replica,), {"c": 4}, events=events)


def _text(renderable: object) -> str:
    console = Console(record=True, width=200)
    console.print(renderable)
    return console.export_text()


def test_plain_output_prints_each_event_once_and_a_line_per_phase() -> None:
    lines: list[str] = []
    reporter = PlainReporter(lines.append, every_s=3600)

    reporter.show(_frame("starting", ()))
    reporter.show(_frame("starting", ("  0.5s  consumer running",)))
    reporter.show(_frame("running", ("  0.5s  consumer running", "  0.9s  removed demo-r2")))

    assert len(lines) == 4
    assert lines[0].startswith("   1.0s starting | demo-r1 4 rows")
    assert lines[1:3] == ["    0.5s  consumer running", "    0.9s  removed demo-r2"]
    assert lines[3].startswith("   1.0s running")


def test_the_live_view_shows_the_replicas_and_the_latest_events() -> None:
    text = _text(render(_frame("running", ("  0.9s  removed demo-r2",))))

    assert "demo-r1" in text and "all replicas" in text
    assert "removed demo-r2" in text


def test_the_live_view_keeps_the_console_url_in_sight() -> None:
    url = "http://127.0.0.1:8123/"
    before = _text(render(_frame("starting", ())))
    shown = _text(render(Frame(1.0, "running", console=url, events=("x",) * 20)))

    assert "open the console" not in before
    assert f"open the console: {url}" in shown  # above the events, however many


def test_the_console_url_says_how_to_keep_the_console() -> None:
    url = "http://127.0.0.1:8123/"
    frame = Frame(1.0, "running", console=url, console_note=STOPS_WITH_THE_DEMO)
    text = _text(render(frame))

    assert f"open the console: {url} (it stops with the demo; " in text
    assert "`collection-manager demo --keep` keeps it until Ctrl-C)" in text


def test_the_verdict_says_mismatch_when_redis_differs() -> None:
    held = {"r1": {"c": Counter({("r1", 1): 1})}}
    left = {"r1": {"c": Counter({("r1", 1): 1})}, "r2": {"c": Counter({("r2", 1): 1})}}

    assert "verified" in _text(render_summary(verify(held, held, [])))
    assert "MISMATCH" in _text(render_summary(verify(left, held, ["r2"])))
