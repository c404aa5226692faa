"""The pages whose examples are tests: README.md and every docs/**/*.md."""

from __future__ import annotations

from pathlib import Path

from tests.examples.markdown import Example, examples

ROOT = Path(__file__).resolve().parents[2]


def pages(root: Path = ROOT) -> list[Path]:
    """README.md and every docs/**/*.md under ``root`` (subfolders too), in a stable order:
    by the parts of the path, so a folder's pages follow one another."""
    docs = root / "docs"
    return [
        root / "README.md",
        *sorted(docs.rglob("*.md"), key=lambda p: p.relative_to(docs).parts),
    ]


def documented(root: Path = ROOT) -> tuple[list[Example], list[str]]:
    """Every runnable example of the pages, and every problem with their markings."""
    found: list[Example] = []
    problems: list[str] = []
    for page in pages(root):
        page_examples, page_problems = examples(str(page.relative_to(root)), page.read_text())
        found += page_examples
        problems += page_problems
    return found, problems
