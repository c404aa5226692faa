"""The command lines and option defaults the docs show against the parser of
collection_manager/cli/main.py (pure but for building the parser).

``page_problems``, over README.md and docs/**/*.md (generated pages and blocks left out:
docs/reference/cli.md lists the old spellings on purpose):

- every ``collection-manager ...`` command in a code block (``.venv/bin/collection-manager``
  too, lines ending in ``\\`` joined) names a command the parser shows: each word a visible
  subcommand of the one before, down to a command that takes no subcommand, none an old
  spelling (collection_manager/cli/deprecated.py, ``ALIASES``, whose rewrite says so), and
  each ``--option`` one of that command's (unless it takes a source's options, as
  ``replicas run`` does) and not an old one. Words after a placeholder (``<name>``,
  ``$VAR``, ``[...]``, ``{...}``) are not checked;
- every default the prose quotes for an option is that option's argparse default:
  ``--flag V`` in backticks followed by ``, the default`` or ``(the default)``/``(default)``;
  ``--flag`` (or ``--flag METAVAR``) in backticks followed by ``(default V``, ``, default V``
  or ``defaults to V``. The command is the words before the option in the same backticks
  (``query --timeout``, in old or new spelling); with none, any command that has the option
  may be meant, and one of their defaults must match. ``V`` is compared as a number (a
  unit after it ignored: ``120 s`` is 120) or as text (backticks ignored); a default of
  ``None`` or a flag's ``False`` is not compared.
"""

from __future__ import annotations

import argparse
import re
import shlex
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from collection_manager.cli.deprecated import DeprecatedOption, notice, rewrite
from collection_manager.cli.main import build_parser
from tests.docs.markdown import CODE, PROSE, doc_pages, lines
from tests.examples.pages import ROOT

PROG = "collection-manager"
_PROGRAM = re.compile(r"(?:^|(?<=[\s;&|(/'\"=$]))collection-manager(?=\s|$)")
_FENCE = re.compile(r"^\s*(?:`{3,}|~{3,})")
_PLACEHOLDER = re.compile(r"^(?:PLACEHOLDER|[<$\[{]|\.\.\.)")
_HELP = ("-h", "--help", "--version")

_OPTION = r"(?<![\w-])(?P<flag>--?[a-z][\w-]*)"
_SPAN = r"`(?P<before>[^`]*?)" + _OPTION + r"(?:[ =](?P<given>[^`]*))?`"
# A value ends at ")", ";", "," (but a thousands separator's) or the end of a sentence.
_VALUE = r"(?P<value>`[^`]+`|(?:[^,;)]|,(?=\d))+?)(?=,(?!\d)|[;)]|\.\s|\.$|$)"
GIVEN = re.compile(_SPAN + r"(?:,\s*the default\b|\s*\((?:the\s+)?default\))")
QUOTED = re.compile(_SPAN + r"(?:\s*\(default\s+|,\s*default\s+|\s+defaults\s+to\s+)" + _VALUE)
_NUMBER = re.compile(r"^-?\d[\d,]*(?:\.\d+)?")


def _subcommands(parser: argparse.ArgumentParser) -> argparse._SubParsersAction[Any] | None:
    return next(
        (a for a in parser._actions if isinstance(a, argparse._SubParsersAction)),
        None,
    )


def _visible(action: argparse._SubParsersAction[Any]) -> list[str]:
    return [choice.dest for choice in action._choices_actions]


def leaves(
    parser: argparse.ArgumentParser, words: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every command that takes no subcommand, as (its words, its parser)."""
    action = _subcommands(parser)
    if action is None:
        yield words, parser
        return
    for name in _visible(action):
        yield from leaves(action.choices[name], (*words, name))


def _options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {name: action for action in parser._actions for name in action.option_strings}


def _tokens(command: str) -> list[str]:
    """The words after the program, up to a shell operator or a comment."""
    command = re.sub(r"<[^<>\s]*>", "PLACEHOLDER", command)
    lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|()<>")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    words = []
    try:
        for token in lexer:
            if token and set(token) <= set(";&|()<>"):
                break
            words.append(token)
    except ValueError:  # an unclosed quote: a line of a longer example
        pass
    return words


def command_problem(words: list[str], parser: argparse.ArgumentParser | None = None) -> str | None:
    """What is wrong with ``collection-manager WORDS``, or ``None``."""
    parser = build_parser() if parser is None else parser
    _, notices = rewrite(words)
    if notices:
        return f"{' '.join([PROG, *words])}: {notices[0].removeprefix(PROG + ': ')}"
    position, path = 0, [PROG]
    while position < len(words) and words[position].startswith("-"):
        if words[position] in _HELP:
            return None
        position += 1
    while (action := _subcommands(parser)) is not None:
        if position == len(words) or words[position].startswith("-"):
            if position < len(words) and words[position] in _HELP:
                return None
            return f"{' '.join(path)} needs a command: {', '.join(_visible(action))}"
        word = words[position]
        if _PLACEHOLDER.match(word):
            return None
        if word not in _visible(action):
            return f"{' '.join(path)} has no command {word!r}: {', '.join(_visible(action))}"
        parser, path, position = action.choices[word], [*path, word], position + 1
    options = _options(parser)
    takes_any = bool(parser.get_default("takes_source_options"))
    for word in words[position:]:
        if _PLACEHOLDER.match(word):
            return None
        if not word.startswith("--"):
            continue
        name = word.split("=", 1)[0]
        found = options.get(name)
        if found is None and not takes_any:
            return f"{' '.join(path)} has no option {name}"
        if isinstance(found, DeprecatedOption):
            return f"{' '.join(path)} {name}: {notice(found.old).removeprefix(PROG + ': ')}"
    return None


def _commands(text: str) -> Iterator[tuple[int, list[str]]]:
    """(line, words after the program) of every command of ``text``'s code blocks."""
    pending: tuple[int, str] | None = None
    for line in lines(text):
        if line.kind != CODE or _FENCE.match(line.text):
            pending = None
            continue
        start, body = (
            (pending[0], pending[1] + " " + line.text) if pending else (line.number, line.text)
        )
        if body.rstrip().endswith("\\"):
            pending = (start, body.rstrip()[:-1])
            continue
        pending = None
        for found in _PROGRAM.finditer(body):
            yield start, _tokens(body[found.end() :])


def _same(value: str, default: Any) -> bool | None:
    """Whether the docs' ``value`` is the argparse ``default``; ``None``: cannot tell."""
    if default is None or isinstance(default, bool) or default is argparse.SUPPRESS:
        return None
    value = value.strip().strip("`").strip()
    if isinstance(default, int | float):
        number = _NUMBER.match(value)
        return None if number is None else float(number[0].replace(",", "")) == float(default)
    if isinstance(default, str | Path):
        return value == str(default)
    return None


def _defaults_of(
    parser: argparse.ArgumentParser, before: str, flag: str
) -> tuple[str, list[Any]] | str:
    """(what is meant, the defaults of ``flag`` there), or a problem."""
    words = [w for w in _tokens(before) if not w.endswith(PROG)]
    if words:
        rewritten, _ = rewrite(words)
        for command, leaf in leaves(parser):
            if tuple(rewritten[: len(command)]) == command:
                found = _options(leaf).get(flag)
                if found is None:
                    return f"{PROG} {' '.join(command)} has no option {flag}"
                return " ".join(command), [found.default]
        return f"{PROG} {' '.join(words)} is no command"
    having = [
        (command, _options(leaf)[flag])
        for command, leaf in leaves(parser)
        if flag in _options(leaf)
    ]
    if not having:
        return f"no command has the option {flag}"
    return " or ".join(" ".join(c) for c, _ in having), [a.default for _, a in having]


def page_problems(page: str, text: str, parser: argparse.ArgumentParser | None = None) -> list[str]:
    """``page``'s commands that the parser refuses or calls old, and option defaults that
    differ from the parser's, as ``page:line: what``."""
    parser = build_parser() if parser is None else parser
    problems = []
    for number, words in _commands(text):
        problem = command_problem(words, parser)
        if problem:
            problems.append(f"{page}:{number}: {problem}")
    page_lines = lines(text)
    for line, after in zip(page_lines, [*page_lines[1:], None], strict=True):
        if line.kind != PROSE:
            continue
        joined = line.text + (" " + after.text.strip() if after and after.kind == PROSE else "")
        quotes = [(m, m["given"]) for m in GIVEN.finditer(joined) if m["given"]]
        quotes += [(m, m["value"]) for m in QUOTED.finditer(joined)]
        for found, value in quotes:
            if found.start() >= len(line.text):
                continue
            meant = _defaults_of(parser, found["before"], found["flag"])
            if isinstance(meant, str):
                problems.append(f"{page}:{line.number}: {meant}")
                continue
            command, defaults = meant
            verdicts = [_same(value, default) for default in defaults]
            if False in verdicts and True not in verdicts:
                shown = " or ".join(repr(d) for d in defaults)
                problems.append(
                    f"{page}:{line.number}: {found['flag']} of {command} defaults to {shown}"
                    f" in the parser, not {value.strip()!r}"
                )
    return problems


def docs_problems(root: Path = ROOT, pages: Iterable[tuple[str, str]] | None = None) -> list[str]:
    """:func:`page_problems` of README.md and every docs/**/*.md."""
    parser = build_parser()
    return [
        problem
        for page, text in (doc_pages(root) if pages is None else pages)
        for problem in page_problems(page, text, parser)
    ]
