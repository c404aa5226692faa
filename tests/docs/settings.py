"""The defaults the docs quote for ``CM_*`` settings against
the classes of collection_manager/config/ (pure but for importing the config classes).

The patterns checked, in the prose of README.md and docs/**/*.md (generated pages and
blocks and code blocks left out; backticks around the name optional):

1. ``CM_X`` ``(default V`` ... : ``(default 10,000)``, ``(default 6 s, at least ...)``;
2. ``CM_X``, ``default V``: ``(`CM_TOPIC`, default `cm.requests`)``;
3. ``CM_X=V`` followed by ``(default)``, ``(the default)`` or ``, the default``;
4. ``CM_X`` ``defaults to V``.

A quote may run onto the next line. ``V`` ends at ``)``, ``,``, ``;`` or the end of the
sentence, and is compared when it is:

- a literal in backticks, against the default as docs/reference/settings.md shows it
  (``config.reference.default_text``: ``cm.requests``, ``true``, ``~/.cache/...``), unless
  it holds a placeholder (``<state dir>/checkpoints``: a default computed from another);
- ``unset`` or ``empty``, likewise;
- a number with an optional unit (``10,000``, ``6 s``, ``500 ms``, ``7 days``, ``1 MiB``),
  converted to the unit of the setting's name (``_ms``, ``_s``, ``_bytes``; a number
  with no unit is in that unit); an unknown word after the number is not a unit
  (``16 requests`` is 16);
- in pattern 3, the value as a shell would set it (``CM_FAIL_ON_DATA_LOSS=false``).

Any other ``V`` (words: ``the state directory``) is not checked. A name no config class has
is reported. Bounds are not checked: the docs state them beside the default in words.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from collection_manager.config import env_name
from collection_manager.config import reference as config_reference
from tests.docs.markdown import PROSE, doc_pages, lines
from tests.examples.pages import ROOT

_NAME = r"`?(?P<name>CM_[A-Z0-9_]+)"
# A value ends at ")", ";", "," (but a thousands separator's) or the end of a sentence.
_VALUE = r"(?P<value>`[^`]+`|(?:[^,;)]|,(?=\d))+?)(?=,(?!\d)|[;)]|\.\s|\.$|$)"
PATTERNS = (
    re.compile(_NAME + r"`?\s*\(default\s+" + _VALUE),
    re.compile(_NAME + r"`?,\s*default\s+" + _VALUE),
    re.compile(_NAME + r"=(?P<value>[^`\s]+)`?(?:\s*\((?:the\s+)?default\)|,\s*the default\b)"),
    re.compile(_NAME + r"`?\s+defaults\s+to\s+" + _VALUE),
)
_SHELL_VALUE = 2  # the index of the pattern whose value is as a shell sets it

_NUMBER = re.compile(r"^(?P<number>\d[\d,]*(?:\.\d+)?)(?:\s*(?P<unit>[A-Za-z]+))?\b")
_SCALES = {
    "ms": {"ms": 1, "s": 1000, "second": 1000, "seconds": 1000, "min": 60_000,
           "minute": 60_000, "minutes": 60_000, "h": 3_600_000, "hour": 3_600_000,
           "hours": 3_600_000, "day": 86_400_000, "days": 86_400_000},
    "bytes": {"B": 1, "byte": 1, "bytes": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3,
              "KB": 1000, "MB": 1000**2, "GB": 1000**3},
}  # fmt: skip
_SCALES["s"] = {unit: scale / 1000 for unit, scale in _SCALES["ms"].items()}


def defaults() -> dict[str, list[tuple[str, Any]]]:
    """Every setting's variable -> (field name, default) of each config class that has it
    (paths computed as the reference computes them: under a home of its own)."""
    found: dict[str, list[tuple[str, Any]]] = {}
    with config_reference._reference_environment():
        for cls in config_reference.CONFIG_CLASSES:
            for field in dataclasses.fields(cls):
                if field.default is not dataclasses.MISSING:
                    value = field.default
                elif field.default_factory is not dataclasses.MISSING:
                    value = field.default_factory()
                else:
                    continue
                found.setdefault(env_name(field.name), []).append((field.name, value))
    return found


def _shown(value: Any) -> str:
    return config_reference.default_text(value, config_reference._REFERENCE_HOME)


def _unit_of(field: str) -> str | None:
    return next((unit for unit in ("ms", "bytes", "s") if field.endswith(f"_{unit}")), None)


def _as_number(text: str, field: str) -> float | None:
    """``text`` as a number in the unit of ``field``'s name, or ``None`` if it is none."""
    matched = _NUMBER.match(text)
    if matched is None:
        return None
    number = float(matched["number"].replace(",", ""))
    unit, scales = matched["unit"], _SCALES.get(_unit_of(field) or "", {})
    if unit and unit in scales:
        number *= scales[unit]
    return number


def _matches(value: str, field: str, default: Any, shell: bool) -> bool | None:
    """Whether the quoted ``value`` is ``default``; ``None`` when it cannot tell."""
    value = value.strip()
    if value.startswith("`") and "<" in value:
        return None
    if value.startswith("`") or value in ("unset", "empty"):
        return value == _shown(default)
    if shell:
        if isinstance(default, bool):
            return value.lower() in (("1", "true", "yes") if default else ("0", "false", "no"))
        if isinstance(default, int | float) and _as_number(value, field) is not None:
            return float(value) == float(default)
        return value == str(default)
    number = _as_number(value, field)
    if number is None or isinstance(default, bool) or not isinstance(default, int | float):
        return None
    return abs(number - float(default)) < 1e-9


def page_problems(
    page: str, text: str, known: dict[str, list[tuple[str, Any]]] | None = None
) -> list[str]:
    """The quoted defaults of ``page`` that differ from the code's, as ``page:line: what``."""
    known = defaults() if known is None else known
    problems = []
    page_lines = lines(text)
    for line, after in zip(page_lines, [*page_lines[1:], None], strict=True):
        if line.kind != PROSE:
            continue
        # A quote may go on to the next line: matched with it, counted on the line it starts.
        joined = line.text + (" " + after.text.strip() if after and after.kind == PROSE else "")
        for index, pattern in enumerate(PATTERNS):
            for found in pattern.finditer(joined):
                if found.start() >= len(line.text):
                    continue
                name, value = found["name"], found["value"].strip()
                where = f"{page}:{line.number}"
                if name not in known:
                    problems.append(f"{where}: {name} is no setting (collection_manager/config/)")
                    continue
                verdicts = [
                    _matches(value, field, default, index == _SHELL_VALUE)
                    for field, default in known[name]
                ]
                if False in verdicts and True not in verdicts:
                    shown = " or ".join(_shown(default) for _, default in known[name])
                    problems.append(
                        f"{where}: {name} defaults to {shown} in the code, not {value!r}"
                    )
    return problems


def docs_problems(root: Path = ROOT, pages: Iterable[tuple[str, str]] | None = None) -> list[str]:
    """:func:`page_problems` of README.md and every docs/**/*.md."""
    known = defaults()
    return [
        problem
        for page, text in (doc_pages(root) if pages is None else pages)
        for problem in page_problems(page, text, known)
    ]
