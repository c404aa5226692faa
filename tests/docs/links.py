"""What the docs name exists (pure but for reading the repository's files).

``page_problems``, over README.md and docs/**/*.md (generated pages and blocks too: a
generated page's links must hold as well):

- every relative link or image, ``[text](target)`` and ``[label]: target``, outside code,
  names a file or folder that exists (resolved from the page's folder; ``#anchor`` is left
  to ``make docs``, whose strict build checks anchors);
- every repository path in backticks exists: a token without spaces that contains ``/``
  and starts with a folder of the repository's root (``collection_manager/storage/keys.py``,
  ``docs/howto/``, ``bench/``), or names a module of a package by its path inside it
  (``storage/keys.py`` for ``collection_manager/storage/keys.py``); ``path::name`` also
  needs ``def name`` or ``class name`` in the file; a glob (``docs/benchmarks/*.png``) needs
  a match; ``path:line`` is taken as ``path``;
- no ``§`` (sections are named by their headings, not numbered), but after ``RFC <number>``
  (a standard's own numbering: ``RFC 9110 §12.5.1``).

``reference_problems``, over the code, tests, bench and deployment files (``SOURCES``): every
``docs/....md``, ``README.md`` (also ``README's``) or ``tests/README.md`` they name exists,
and a heading named right after it, in quotes (``docs/howto/buckets.md, "Choosing N"``,
``README's "Using it"``) or after a comma up to a closing parenthesis
(``(docs/operations.md, Dead letters)``), is a heading of that page
(``markdown.same_heading``); and no ``§`` remains, but an RFC's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path

from tests.docs.markdown import CODE, doc_pages, headings, lines, same_heading
from tests.examples.pages import ROOT

SECTION_SIGN = "\N{SECTION SIGN}"

# The folders and files whose text ``reference_problems`` reads: everything but the docs,
# and but the checks themselves and their tests, whose fixtures name pages that are not.
_CHECKS = ("tests/docs/", "tests/unit/test_docs_")
# The folders and files whose text ``reference_problems`` reads: everything but the docs.
SOURCES = (
    "collection_manager",
    "producers",
    "spark_consumers",
    "schemas",
    "tests",
    "bench",
    "docker",
    ".ci",
    "Makefile",
    "pyproject.toml",
    "mkdocs.yml",
    "docker-compose.yml",
    "docker-compose.ports.yml",
)
_SUFFIXES = frozenset(
    {".py", ".lua", ".sh", ".yml", ".yaml", ".toml", ".cfg", ".md", ".html", ".js", ".css", ""}
)
_SKIPPED = frozenset({"__pycache__", "results", ".pytest_cache"})
# Where a path named inside a package (``storage/keys.py``) is looked for.
PACKAGES = ("collection_manager", "producers", "spark_consumers", "schemas", "bench", "tests")

_LINK = re.compile(
    r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?(?P<target>[^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)"
)
_DEFINITION = re.compile(r"^\s{0,3}\[[^\]]+\]:\s+<?(?P<target>[^\s>]+)>?")
_CODE_SPAN = re.compile(r"(?P<ticks>`+)(?P<code>.+?)(?P=ticks)")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
_PATH = re.compile(r"^[\w.-]+(?:/[\w.*?\[\]-]+)*/?$")
_DOC_NAME = re.compile(
    r"(?P<page>(?<![\w/.-])docs/[\w./-]+?\.md|(?<![\w/.-])(?:tests/)?README(?:\.md|'s)?)\b"
)
_QUOTED = re.compile(
    r"^(?:\s*" + SECTION_SIGN + r"[\w-]+,?)*(?:,\s*|\s+)\\?\"(?P<heading>[\w`][^\"\\]*)\\?\""
)
_AFTER_COMMA = re.compile(r"^,\s*(?P<heading>[A-Z`][^()\"';,]*?)\)")
# A Python string continued on the next line ("...Kafka "\n    "and Redis)"), and a comment
# or docstring continued on the next line.
_STRING_JOIN = re.compile(r"\"[ \t]*\n[ \t]*\"")
_LINE_JOIN = re.compile(r"[ \t]*\n[ \t]*(?:#+|--|\*)?[ \t]*")


_RFC_BEFORE = re.compile(r"RFC\s*\d+\s*$")


def numbers_a_section(line: str) -> bool:
    """Whether ``line`` has a ``§`` that is not an RFC's (``RFC 9110 §12.5.1``)."""
    return any(not _RFC_BEFORE.search(line[: m.start()]) for m in re.finditer(SECTION_SIGN, line))


def _strip_code_spans(text: str) -> str:
    return _CODE_SPAN.sub(lambda m: " " * len(m.group(0)), text)


def _link_problem(root: Path, page: str, target: str) -> str | None:
    if not target or target.startswith("#") or _SCHEME.match(target) or target.startswith("/"):
        return None
    path = target.split("#", 1)[0].split("?", 1)[0]
    if not path:
        return None
    if not (root / page).parent.joinpath(path).exists():
        return f"link to {target!r}: no such file"
    return None


def resolve(root: Path, path: str) -> Path | None:
    """The file or folder a backticked repository path names, or ``None`` if none exists.

    ``None`` too for a token that is no repository path (see the module's docstring): the
    caller tells the two apart with :func:`is_repository_path`."""
    path = path.rstrip("/") or path
    if any(ch in path for ch in "*?["):
        matches = sorted(root.glob(path))
        if not matches:
            for package in PACKAGES:
                matches = sorted((root / package).glob(path))
                if matches:
                    break
        return matches[0] if matches else None
    for candidate in (root / path, *(root / package / path for package in PACKAGES)):
        if candidate.exists():
            return candidate
    return None


def is_repository_path(root: Path, token: str) -> bool:
    """Whether a backticked token is taken for a repository path (the module's docstring)."""
    if "/" not in token or token.startswith(("/", "~", ".", "$")) or not _PATH.match(token):
        return False
    first = token.split("/", 1)[0]
    if (root / first).is_dir():
        return True
    # storage/keys.py: a package's folder, or a file with a suffix of the repository's files.
    return any((root / package / first).is_dir() for package in PACKAGES) or bool(
        re.search(r"\.(py|md|lua|avsc|sh|yml|toml|png)$", token)
    )


def _code_path_problem(root: Path, token: str) -> str | None:
    token = token.strip()
    name = None
    if "::" in token:
        token, name = token.split("::", 1)
    token = re.sub(r":\d+(?:-\d+)?$", "", token)
    if not is_repository_path(root, token):
        return None
    found = resolve(root, token)
    if found is None:
        return f"`{token}`: no such file or folder"
    if name is not None and found.is_file():
        first = name.split("::")[0].split("[")[0]
        if not re.search(
            rf"^\s*(?:async\s+)?(?:def|class)\s+{re.escape(first)}\b", found.read_text(), re.M
        ):
            return f"`{token}::{name}`: no {first} in {found.relative_to(root)}"
    return None


def page_problems(page: str, text: str, root: Path = ROOT) -> list[str]:
    """What ``page`` (its path from ``root``) links or names that does not exist, and its
    ``§``, as ``page:line: what``."""
    problems = []
    for line in lines(text):
        if line.kind == CODE:
            continue
        where = f"{page}:{line.number}"
        if numbers_a_section(line.text):
            problems.append(f"{where}: a {SECTION_SIGN} section number (name the heading)")
        outside = _strip_code_spans(line.text)
        targets = [m["target"] for m in _LINK.finditer(outside)]
        defined = _DEFINITION.match(outside)
        if defined:
            targets.append(defined["target"])
        for target in targets:
            problem = _link_problem(root, page, target)
            if problem:
                problems.append(f"{where}: {problem}")
        for span in _CODE_SPAN.finditer(line.text):
            problem = _code_path_problem(root, span["code"])
            if problem:
                problems.append(f"{where}: {problem}")
    return problems


def docs_problems(root: Path = ROOT) -> list[str]:
    """:func:`page_problems` of README.md and every docs/**/*.md."""
    return [
        problem for page, text in doc_pages(root) for problem in page_problems(page, text, root)
    ]


def source_files(root: Path = ROOT) -> Iterator[Path]:
    """The files of ``SOURCES`` under ``root`` whose text is read, in a stable order."""
    for name in SOURCES:
        top = root / name
        if top.is_file():
            yield top
        elif top.is_dir():
            for path in sorted(top.rglob("*")):
                relative = str(path.relative_to(root))
                if (
                    path.is_file()
                    and path.suffix in _SUFFIXES
                    and not _SKIPPED & set(path.parts)
                    and not relative.startswith(_CHECKS)
                ):
                    yield path


def _joined(text: str) -> str:
    return _LINE_JOIN.sub(" ", _STRING_JOIN.sub("", text))


def _page_file(root: Path, name: str) -> Path:
    if name.startswith(("README", "tests/README")):
        return root / name.split("README")[0] / "README.md"
    return root / name


def text_problems(source: str, text: str, root: Path = ROOT) -> list[str]:
    """The references of one file's ``text`` (named ``source``) to docs pages that name no
    page or no heading, and its ``§``, as ``source:line: what``."""
    problems = []
    heading_cache: dict[Path, list[str]] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if numbers_a_section(line):
            problems.append(
                f"{source}:{number}: a {SECTION_SIGN} section number (name the heading)"
            )
    for match in _DOC_NAME.finditer(text):
        number = text.count("\n", 0, match.start()) + 1
        where = f"{source}:{number}"
        name = match["page"]
        page = _page_file(root, name)
        if not page.is_file():
            problems.append(f"{where}: {name}: no such page")
            continue
        rest = _joined(text[match.end() : match.end() + 300])
        named = _QUOTED.match(rest) or _AFTER_COMMA.match(rest)
        if named is None:
            continue
        if page not in heading_cache:
            heading_cache[page] = headings(page.read_text())
        heading = named["heading"].strip()
        if not any(same_heading(heading, h) for h in heading_cache[page]):
            problems.append(f"{where}: {name}: no heading {heading!r} on {page.relative_to(root)}")
    return problems


def reference_problems(root: Path = ROOT, files: Iterable[Path] | None = None) -> list[str]:
    """:func:`text_problems` of every file of ``SOURCES`` (or of ``files``)."""
    problems = []
    for path in source_files(root) if files is None else files:
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        problems += text_problems(str(path.relative_to(root)), text, root)
    return problems
