"""The narrative word count of the documentation: ``python -m tests.docs.words``.

Prints the narrative words of README.md and every docs/**/*.md, page by page, then their
total. Narrative words are those written by hand, counted as ``wc -w`` would but for:

- generated pages and generated blocks (``tests/docs/markdown.py``: the settings, metric
  and CLI references; docs/benchmarks.md, which ``make bench`` writes whole, its notes
  from bench/notes.md);
- fenced code blocks (commands and output, not prose);
- HTML comments (the examples' markings, generated marks);
- the targets of links and images (``[text](target)`` counts its text only);
- tokens with no letter or digit in them (a table's ``|`` and ``---``, a list's ``-``).

Issue 45 bounds the total (:data:`LIMIT`); ``tests/unit/test_docs_words.py`` asserts it.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from pathlib import Path

from tests.docs.markdown import PROSE, doc_pages, lines
from tests.examples.pages import ROOT

LIMIT = 15_000

_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_LINK_TARGET = re.compile(r"(\]\s*)\([^)\s]*(?:\s+\"[^\"]*\")?\)")
_REFERENCE_DEFINITION = re.compile(r"^\s{0,3}\[[^\]]+\]:\s+\S+.*$", re.MULTILINE)
_WORD = re.compile(r"\w")


def narrative(text: str) -> str:
    """The narrative text of a page: its prose lines, without comments and link targets."""
    prose = "\n".join(line.text for line in lines(text) if line.kind == PROSE)
    prose = _COMMENT.sub(" ", prose)
    prose = _REFERENCE_DEFINITION.sub(" ", prose)
    return _LINK_TARGET.sub(r"\1", prose)


def count(text: str) -> int:
    """The narrative words of a page's text."""
    return sum(1 for token in narrative(text).split() if _WORD.search(token))


def counts(root: Path = ROOT) -> dict[str, int]:
    """Narrative words per page (path from ``root``), in the pages' order."""
    return {path: count(text) for path, text in doc_pages(root)}


def report(per_page: dict[str, int]) -> str:
    """The table ``main`` prints: words and path per page, then the total and the limit."""
    width = max([len(f"{n:,}") for n in per_page.values()] + [len(f"{LIMIT:,}")])
    rows = [f"{n:>{width},}  {path}" for path, n in per_page.items()]
    total = sum(per_page.values())
    rows.append(f"{total:>{width},}  total (at most {LIMIT:,})")
    return "\n".join(rows) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Prints the count; exits 1 when the total is over :data:`LIMIT`."""
    args = sys.argv[1:] if argv is None else list(argv)
    if args:
        sys.stderr.write("usage: python -m tests.docs.words\n")
        return 2
    per_page = counts()
    sys.stdout.write(report(per_page))
    return 0 if sum(per_page.values()) <= LIMIT else 1


if __name__ == "__main__":
    sys.exit(main())
