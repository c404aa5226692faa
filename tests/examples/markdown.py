"""The examples of a Markdown page: its fenced blocks and their markings (pure, no I/O).

The convention is in ``tests/examples/__init__.py``.
"""

from __future__ import annotations

import dataclasses
import re

SHELL = frozenset({"sh", "bash", "shell", "console"})
PYTHON = frozenset({"python", "py"})
RUNNABLE = SHELL | PYTHON

_OPEN = re.compile(r"^\s*(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`]*)$")
_MARKING = re.compile(r"^\s*<!--\s*example:\s*(?P<marking>.*?)\s*-->\s*$")
_HOW = "<!-- example: run --> or <!-- example: illustration -->"


@dataclasses.dataclass(frozen=True)
class Fence:
    """A fenced block: where it opens, its language (first word of the info string), its
    text, and the marking of the line before it (``None`` when there is none)."""

    line: int
    language: str
    code: str
    marking: str | None


@dataclasses.dataclass(frozen=True)
class Example:
    """A runnable example: one block, or a Python block with those that continue it.

    Attributes:
        path: the page, as the reader names it (``docs/operations.md``).
        line: the line of its first opening fence.
        language: ``sh`` for every shell, ``python`` for Python.
        code: the text to run.
        fresh_state: whether it runs in an empty state directory of its own.
        until: text that says the block's long-running command is ready, or ``None``.
        slow: whether it runs only in ``make test-slow`` (it starts a replicated
            deployment, minutes of its own).
        timeout_s: its time to end (or get ready), ``None`` for the runner's default.
        session: whether it is the start of a reader's session that a test goes on with
            (``tests/integration/test_second_session.py``), which runs it instead.
    """

    path: str
    line: int
    language: str
    code: str
    fresh_state: bool = False
    until: str | None = None
    slow: bool = False
    timeout_s: float | None = None
    session: bool = False

    @property
    def location(self) -> str:
        """``path:line``, as editors and pytest's ids take it."""
        return f"{self.path}:{self.line}"


@dataclasses.dataclass(frozen=True)
class Marking:
    """A parsed marking: ``run`` (with its options) or ``illustration``."""

    run: bool
    fresh_state: bool = False
    continues: bool = False
    until: str | None = None
    slow: bool = False
    timeout_s: float | None = None
    session: bool = False


def fences(text: str) -> list[Fence]:
    """Every fenced block of ``text``, in order."""
    lines = text.splitlines()
    found, index = [], 0
    while index < len(lines):
        opened = _OPEN.match(lines[index])
        if opened is None:
            index += 1
            continue
        fence, info = opened["fence"], opened["info"].split()
        end = index + 1
        # A fence closes with at least as many of the same character and nothing else.
        while end < len(lines) and not _closes(lines[end], fence):
            end += 1
        found.append(
            Fence(
                line=index + 1,
                language=info[0].lower() if info else "",
                code="\n".join(lines[index + 1 : end]) + "\n",
                marking=_marking_before(lines, index),
            )
        )
        index = end + 1
    return found


def _closes(line: str, fence: str) -> bool:
    stripped = line.strip()
    return stripped.startswith(fence) and not stripped.strip(fence[0])


def _marking_before(lines: list[str], index: int) -> str | None:
    """The marking on the last non-blank line before line ``index``, if it is one."""
    for previous in reversed(lines[:index]):
        if previous.strip():
            matched = _MARKING.match(previous)
            return None if matched is None else matched["marking"]
    return None


def parse_marking(text: str) -> Marking:
    """The marking ``text`` (what follows ``example:``) as a ``Marking``.

    Raises:
        ValueError: naming what is wrong, when it is not ``illustration`` or ``run`` with
            known options.
    """
    kind, *options = [part.strip() for part in text.split(",")]
    if kind == "illustration" and not options:
        return Marking(run=False)
    if kind != "run":
        raise ValueError(f"unknown marking {text!r}: expected {_HOW}")
    marking = Marking(run=True)
    for option in options:
        if option == "fresh-state":
            marking = dataclasses.replace(marking, fresh_state=True)
        elif option == "continues":
            marking = dataclasses.replace(marking, continues=True)
        elif option == "slow":
            marking = dataclasses.replace(marking, slow=True)
        elif option == "session":
            marking = dataclasses.replace(marking, session=True)
        elif option.startswith("until ") and option[6:].strip():
            marking = dataclasses.replace(marking, until=option[6:].strip().strip('"'))
        elif option.startswith("timeout ") and option[8:].strip().isdigit():
            marking = dataclasses.replace(marking, timeout_s=float(option[8:].strip()))
        else:
            raise ValueError(f"unknown option {option!r} of marking {text!r}")
    return marking


def examples(path: str, text: str) -> tuple[list[Example], list[str]]:
    """The runnable examples of the page ``path`` with text ``text``, and its problems.

    A problem is a ``path:line: ...`` line: a runnable fence without a marking, a marking
    that does not parse, a ``continues`` with no example of its language before it.
    """
    found: list[Example] = []
    problems: list[str] = []
    for fence in fences(text):
        if fence.language not in RUNNABLE:
            continue
        where = f"{path}:{fence.line}"
        if fence.marking is None:
            problems.append(f"{where}: {fence.language} block without a marking ({_HOW})")
            continue
        try:
            marking = parse_marking(fence.marking)
        except ValueError as error:
            problems.append(f"{where}: {error}")
            continue
        if marking.run:
            problem = _add(found, path, fence, marking)
            if problem:
                problems.append(f"{where}: {problem}")
    return found, problems


def _add(found: list[Example], path: str, fence: Fence, marking: Marking) -> str | None:
    """Appends the fence's example to ``found`` (or to the one it continues); a problem."""
    language = "python" if fence.language in PYTHON else "sh"
    example = Example(
        path,
        fence.line,
        language,
        fence.code,
        marking.fresh_state,
        marking.until,
        marking.slow,
        marking.timeout_s,
        marking.session,
    )
    if not marking.continues:
        found.append(example)
        return None
    if not found or found[-1].language != language:
        return "'continues' needs a run block of its language before it"
    # The options of the first block hold for the whole: it is where a reader starts.
    previous = found[-1]
    found[-1] = dataclasses.replace(
        previous, code=previous.code + example.code, until=example.until or previous.until
    )
    return None
