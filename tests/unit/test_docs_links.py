"""The docs name only what exists: their links and backticked paths, and the references
of the code, tests and bench to docs pages and their headings (``tests/docs/links.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs.links import docs_problems, page_problems, reference_problems, text_problems

SECTION = "\N{SECTION SIGN}"
BUCKETS = "docs/howto/buckets.md"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository of a README, two docs pages, a package module and a test."""
    (tmp_path / "docs" / "howto").mkdir(parents=True)
    (tmp_path / "collection_manager" / "storage").mkdir(parents=True)
    (tmp_path / "tests").mkdir()
    (tmp_path / "README.md").write_text("# Read me\n\n## Using it\n")
    (tmp_path / "docs" / "howto" / "buckets.md").write_text("# Buckets\n\n## Choosing `N`\n")
    (tmp_path / "docs" / "design.md").write_text("# Design\n")
    (tmp_path / "collection_manager" / "storage" / "keys.py").write_text("KEYS = 1\n")
    (tmp_path / "tests" / "test_x.py").write_text("def test_one() -> None:\n    pass\n")
    (tmp_path / "tests" / "README.md").write_text("# Tests\n\n## The targets\n")
    return tmp_path


def test_links_and_paths_that_exist_pass(repo: Path) -> None:
    page = (
        "See [buckets](howto/buckets.md#choosing-n), [home](../README.md), [web](https://x.org),"
        " [here](#design), `collection_manager/storage/keys.py`, `storage/keys.py:3`,\n"
        "`tests/test_x.py::test_one`, `docs/howto/`, `docs/*.md`, `text/event-stream`,"
        " `/proc/PID/stat`, `~/.cache/x`.\n"
        "```sh\ncat [no](such.md) `no/such.py`\n```\n"
    )

    assert page_problems("docs/design.md", page, repo) == []


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("[x](howto/gone.md)", "link to 'howto/gone.md': no such file"),
        ("[x](gone.md#a)", "link to 'gone.md#a': no such file"),
        ("![plot](benchmarks/e2e.png)", "link to 'benchmarks/e2e.png': no such file"),
        ("[x]: ../GONE.md", "link to '../GONE.md': no such file"),
        (
            "`collection_manager/storage/gone.py`",
            "`collection_manager/storage/gone.py`: no such file or folder",
        ),
        ("`storage/gone.py`", "`storage/gone.py`: no such file or folder"),
        ("`docs/gone/`", "`docs/gone/`: no such file or folder"),
        ("`docs/*.txt`", "`docs/*.txt`: no such file or folder"),
        (
            "`tests/test_x.py::test_two`",
            "`tests/test_x.py::test_two`: no test_two in tests/test_x.py",
        ),
        (f"design {SECTION}6", f"a {SECTION} section number (name the heading)"),
    ],
)
def test_a_link_or_path_that_does_not_exist_is_named_with_its_page_and_line(
    repo: Path, line: str, problem: str
) -> None:
    assert page_problems("docs/design.md", line + "\n", repo) == [f"docs/design.md:1: {problem}"]


def test_the_real_docs_name_only_what_exists() -> None:
    assert docs_problems() == []


def test_references_to_pages_and_headings_that_exist_pass(repo: Path) -> None:
    text = (
        '"""Buckets (docs/howto/buckets.md, "Choosing N"; README\'s "Using it").\n'
        "Also (docs/howto/buckets.md, Choosing `N`) and docs/design.md and RFC 9110 "
        f'{SECTION}12.5.1."""\n'
        'help="see docs/howto/buckets.md, Choosing "\n    "N)"\n'
        'PAGE = "README.md"\n'
        '# (tests/README.md, "The targets")\n'
    )

    assert text_problems("x.py", text, repo) == []


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("# (docs/gone.md)", "x.py:1: docs/gone.md: no such page"),
        (
            '# (tests/README.md, "Using it")',
            "x.py:1: tests/README.md: no heading 'Using it' on tests/README.md",
        ),
        (
            '# docs/howto/buckets.md, "Choosing M"',
            f"x.py:1: {BUCKETS}: no heading 'Choosing M' on {BUCKETS}",
        ),
        (
            "# (docs/howto/buckets.md, Faults)",
            f"x.py:1: {BUCKETS}: no heading 'Faults' on {BUCKETS}",
        ),
        (
            'x = 1\n"see docs/howto/buckets.md, Dead "\n"letters)"',
            f"x.py:2: {BUCKETS}: no heading 'Dead letters' on {BUCKETS}",
        ),
        ('# README\'s "Using that"', "x.py:1: README's: no heading 'Using that' on README.md"),
        (f"# docs/design.md {SECTION}9", f"x.py:1: a {SECTION} section number (name the heading)"),
    ],
)
def test_a_reference_to_a_page_or_heading_that_is_not_is_named(
    repo: Path, text: str, problem: str
) -> None:
    assert text_problems("x.py", text, repo) == [problem]


def test_the_code_names_only_pages_and_headings_that_exist() -> None:
    assert reference_problems() == []
