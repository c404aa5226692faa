"""The mkdocs hook of ``make docs`` (``mkdocs.yml``, ``hooks``): README.md is the site's home.

README.md stays at the repository's top, the page GitHub shows first; the site shows the
same page as its home instead of a second, hand-kept ``docs/index.md``. The hook:

- adds README.md to the site as ``index.md`` (a ``docs/index.md`` as well is an error);
- rewrites, outside code, the links of the site's pages as the site lays them out: from
  README.md, ``docs/X`` becomes ``X``; from any page, a link to README.md becomes one to
  the home page, and a link to a file outside docs/ (``CHANGELOG.md``, ``tests/README.md``:
  in the repository, not on the site) becomes its text, with the path in backticks;
- expands a nav entry ending in ``/`` (``concepts/``) into that folder's pages: its
  ``index.md`` first, then the others by name, so a new page needs no edit of the nav.

Links then go through mkdocs' own validation (``validation`` in ``mkdocs.yml``): a link to
a page or an anchor that does not exist fails ``make docs`` (``--strict``).
"""

from __future__ import annotations

import posixpath
import re
import sys
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

# mkdocs loads a hook by its path: the repository's root is not on sys.path by itself.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.docs.markdown import CODE, lines

HOME = "index.md"
README = "README.md"

_LINK = re.compile(
    r"(?P<bang>!?)\[(?P<text>(?:[^\]\[]|\[[^\]]*\])*)\]\((?P<target>[^)\s]+)(?P<title>\s+\"[^\"]*\")?\)"
)
_CODE_SPAN = re.compile(r"(`+).+?\1")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def _root(config: MkDocsConfig) -> Path:
    return Path(config.config_file_path).parent


def _folder_pages(docs_dir: Path, folder: str) -> list[str]:
    found = sorted(
        path.relative_to(docs_dir).as_posix() for path in (docs_dir / folder).glob("*.md")
    )
    index = f"{folder.rstrip('/')}/{HOME}"
    return [index] * (index in found) + [page for page in found if page != index]


def _expand(entry: Any, docs_dir: Path) -> Any:
    if isinstance(entry, str) and entry.endswith("/"):
        return _folder_pages(docs_dir, entry)
    if isinstance(entry, list):
        expanded: list[Any] = []
        for item in entry:
            value = _expand(item, docs_dir)
            if isinstance(item, str) and isinstance(value, list):
                expanded += value
            else:
                expanded.append(value)
        return expanded
    if isinstance(entry, dict):
        return {title: _expand(value, docs_dir) for title, value in entry.items()}
    return entry


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    """Folders in the nav become their pages."""
    if config.nav is not None:
        config.nav = _expand(config.nav, Path(config.docs_dir))
    return config


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """README.md joins the site as its home page."""
    if files.get_file_from_path(HOME) is not None:
        raise PluginError(f"docs/{HOME} and {README} would both be the home page: remove one")
    text = (_root(config) / README).read_text()
    files.append(File.generated(config, HOME, content=text))
    return files


def link_target(target: str, page: str, docs_dir: str) -> str | None:
    """The target of a link of ``page`` (its path from the repository's root) on the site,
    relative to where the site has that page; ``None`` when the target is not on the site.
    Targets with a scheme, absolute ones and anchors alone are left as they are."""
    if _SCHEME.match(target) or target.startswith(("/", "#")):
        return target
    path, hash_, anchor = target.partition("#")
    in_repository = posixpath.normpath(posixpath.join(posixpath.dirname(page), path))
    site_page = HOME if page == README else posixpath.relpath(page, docs_dir)
    if in_repository == README:
        on_site = HOME
    elif in_repository.startswith(docs_dir + "/"):
        on_site = in_repository[len(docs_dir) + 1 :]
    else:
        return None
    relative = posixpath.relpath(on_site, posixpath.dirname(site_page) or ".")
    return relative + hash_ + anchor


def rewrite_links(markdown: str, page: str, docs_dir: str = "docs") -> str:
    """``markdown``'s links as the site lays its pages out (the module's docstring)."""

    def link(found: re.Match[str]) -> str:
        target = link_target(found["target"], page, docs_dir)
        if target is None:
            return f"{found['text']} (`{found['target']}`)"
        return f"{found['bang']}[{found['text']}]({target}{found['title'] or ''})"

    def outside_code(text: str) -> str:
        parts, last = [], 0
        for span in _CODE_SPAN.finditer(text):
            parts += [_LINK.sub(link, text[last : span.start()]), span.group(0)]
            last = span.end()
        return "".join([*parts, _LINK.sub(link, text[last:])])

    out = [line.text if line.kind == CODE else outside_code(line.text) for line in lines(markdown)]
    return "\n".join(out) + ("\n" if markdown.endswith("\n") else "")


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    """The page's links, as the site lays its pages out."""
    src = page.file.src_uri
    docs_dir = Path(config.docs_dir).relative_to(_root(config)).as_posix()
    in_repository = README if src == HOME else f"{docs_dir}/{src}"
    return rewrite_links(markdown, in_repository, docs_dir)
