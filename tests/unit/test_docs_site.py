"""The documentation site (``mkdocs.yml``, ``tests/docs/site.py``): README.md is its home,
links are laid out as the site lays out its pages, and a broken link fails the build."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.site import _expand, link_target, rewrite_links
from tests.examples.pages import ROOT


@pytest.mark.parametrize(
    ("page", "target", "on_site"),
    [
        ("README.md", "docs/howto/buckets.md#choosing-n", "howto/buckets.md#choosing-n"),
        ("README.md", "docs/benchmarks.md", "benchmarks.md"),
        ("README.md", "#using-it", "#using-it"),
        ("README.md", "https://example.org/x.md", "https://example.org/x.md"),
        ("docs/howto/buckets.md", "../concepts/reads.md", "../concepts/reads.md"),
        ("docs/howto/buckets.md", "../../README.md#using-it", "../index.md#using-it"),
        ("docs/operations.md", "../README.md", "index.md"),
        ("docs/operations.md", "benchmarks/e2e.png", "benchmarks/e2e.png"),
        ("README.md", "CHANGELOG.md", None),
        ("docs/operations.md", "../tests/README.md", None),
    ],
)
def test_a_link_goes_where_the_site_has_its_target(
    page: str, target: str, on_site: str | None
) -> None:
    assert link_target(target, page, "docs") == on_site


def test_links_outside_the_site_become_text_and_code_is_left_alone() -> None:
    markdown = (
        "See [the changes](CHANGELOG.md) and [buckets](docs/howto/buckets.md) "
        "`[x](docs/a.md)`.\n```sh\ncat [y](docs/b.md)\n```\n"
    )

    assert rewrite_links(markdown, "README.md") == (
        "See the changes (`CHANGELOG.md`) and [buckets](howto/buckets.md) "
        "`[x](docs/a.md)`.\n```sh\ncat [y](docs/b.md)\n```\n"
    )


def test_a_folder_in_the_nav_is_its_pages_index_first(tmp_path: Path) -> None:
    (tmp_path / "decisions").mkdir()
    for name in ("0002-b.md", "index.md", "0001-a.md", "notes.txt"):
        (tmp_path / "decisions" / name).write_text("# x\n")
    nav = [{"Home": "index.md"}, {"Decisions": ["design.md", "decisions/"]}]

    assert _expand(nav, tmp_path) == [
        {"Home": "index.md"},
        {
            "Decisions": [
                "design.md",
                "decisions/index.md",
                "decisions/0001-a.md",
                "decisions/0002-b.md",
            ]
        },
    ]


def _site(tmp_path: Path, page: str) -> subprocess.CompletedProcess[str]:
    """Builds a site of the repository's mkdocs.yml over a README and one page."""
    (tmp_path / "docs").mkdir()
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    text = (tmp_path / "mkdocs.yml").read_text()
    hook = str(ROOT / "tests" / "docs" / "site.py")
    (tmp_path / "mkdocs.yml").write_text(text.replace("tests/docs/site.py", hook))
    (tmp_path / "README.md").write_text("# Home\n\n[Design](docs/design.md#the-parts)\n")
    for name in ("design.md", "operations.md", "benchmarks.md"):
        (tmp_path / "docs" / name).write_text(f"# {name}\n\n## The parts\n")
    (tmp_path / "docs" / "design.md").write_text(page)
    mkdocs = Path(sys.executable).parent / "mkdocs"
    return subprocess.run(
        [str(mkdocs), "build", "--site-dir", str(tmp_path / "site")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        timeout=120,
    )


def test_a_site_whose_links_hold_builds(tmp_path: Path) -> None:
    built = _site(tmp_path, "# Design\n\n## The parts\n\n[home](../README.md#home)\n")

    assert built.returncode == 0, built.stderr


@pytest.mark.parametrize(
    ("page", "warning"),
    [
        ("# Design\n\n## The parts\n\n[gone](gone.md)\n", "link 'gone.md', but the target"),
        ("# Design\n\n## Other\n", "does not contain an anchor '#the-parts'"),
    ],
)
def test_a_broken_link_or_anchor_fails_the_build(tmp_path: Path, page: str, warning: str) -> None:
    built = _site(tmp_path, page)

    assert built.returncode != 0
    assert warning in built.stderr
