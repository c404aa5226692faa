"""The runner of the documentation's examples (``tests/examples``): what it finds in a page,
and that it fails an example that is broken, with no service."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from tests.examples.markdown import Example, examples, parse_marking
from tests.examples.pages import documented, pages
from tests.examples.runner import problems, run

PAGE = textwrap.dedent(
    """\
    # A page

    <!-- example: run -->
    ```sh
    echo one
    ```

    <!-- example: illustration -->
    ```python
    serve_forever()
    ```

    ```toml
    [not] = "run"
    ```

    ```
    a diagram
    ```

    Run this:
    ```bash
    echo unmarked
    ```

    <!-- example: run, fresh-state, until ready -->
    ```python
    x = 1
    ```
    <!-- example: run, continues -->
    ```py
    print(x)
    ```
    """
)


def test_a_page_gives_its_run_blocks_and_names_an_unmarked_one_by_file_and_line() -> None:
    found, trouble = examples("page.md", PAGE)

    assert [(e.location, e.language) for e in found] == [
        ("page.md:4", "sh"),
        ("page.md:27", "python"),
    ]
    assert found[0].code == "echo one\n"
    assert found[1].code == "x = 1\nprint(x)\n"
    assert (found[1].fresh_state, found[1].until) == (True, "ready")
    assert trouble == [
        "page.md:22: bash block without a marking "
        "(<!-- example: run --> or <!-- example: illustration -->)"
    ]


@pytest.mark.parametrize(
    ("marking", "message"),
    [
        ("runnable", "unknown marking 'runnable'"),
        ("run, quickly", "unknown option 'quickly'"),
        ("illustration, fresh-state", "unknown marking"),
        ("run, until", "unknown option 'until'"),
        ("run, timeout soon", "unknown option 'timeout soon'"),
    ],
)
def test_a_marking_that_does_not_parse_is_named(marking: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_marking(marking)


def test_continues_needs_a_run_block_of_its_language_before_it() -> None:
    page = "<!-- example: run -->\n```sh\ntrue\n```\n"
    page += "<!-- example: run, continues -->\n```python\n```\n"

    assert examples("p.md", page)[1] == [
        "p.md:6: 'continues' needs a run block of its language before it"
    ]


def test_shell_blocks_continue_as_one_script_with_the_first_blocks_options() -> None:
    page = "<!-- example: run, fresh-state, slow, timeout 300 -->\n```sh\nsleep 9 &\n```\n"
    page += "Prose between.\n\n<!-- example: run, continues -->\n```bash\nkill %1\n```\n"

    found, trouble = examples("p.md", page)

    assert trouble == []
    assert [(e.code, e.fresh_state, e.slow, e.timeout_s) for e in found] == [
        ("sleep 9 &\nkill %1\n", True, True, 300.0)
    ]


def test_the_pages_are_readme_and_every_page_under_docs_in_a_stable_order(
    tmp_path: Path,
) -> None:
    # Paths as parts: the docs' reference check takes a docs page's path in a string for a
    # reference to a page that must exist (tests/docs/links.py).
    for parts in [("README.md",), ("b.md",), ("a", "z.md"), ("a.md",), ("a", "b", "c.md")]:
        page = tmp_path.joinpath(*(parts if parts == ("README.md",) else ("docs", *parts)))
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text("# x\n")
    (tmp_path / "docs" / "a" / "figure.png").write_bytes(b"")

    found = [page.relative_to(tmp_path).parts for page in pages(tmp_path)]

    assert found == [
        ("README.md",),
        ("docs", "a", "b", "c.md"),
        ("docs", "a", "z.md"),
        ("docs", "a.md"),
        ("docs", "b.md"),
    ]


def test_every_runnable_block_of_the_docs_is_marked() -> None:
    found, trouble = documented()

    assert trouble == []
    assert found, "the docs have runnable examples"


def _run(tmp_path: Path, language: str, code: str, until: str | None = None) -> list[str]:
    example = Example("page.md", 3, language, textwrap.dedent(code), until=until)
    # A bound, not a pace: on a loaded machine a shell took most of a minute to say ready.
    outcome = run(example, env=dict(os.environ), cwd=tmp_path, workdir=tmp_path, timeout=300)
    return problems(example, outcome)


def test_a_working_example_has_no_problem(tmp_path: Path) -> None:
    assert _run(tmp_path, "sh", "echo fine | head -1\n") == []
    assert _run(tmp_path, "python", "import os\nprint(os.getcwd())\n") == []


def test_a_shell_example_broken_on_purpose_fails_at_its_failing_command(tmp_path: Path) -> None:
    code = "echo before\nfalse\necho never\n"

    assert _run(tmp_path, "sh", code) == ["page.md:3: exit status 1"]


def test_a_python_example_that_raises_fails_with_its_traceback(tmp_path: Path) -> None:
    assert _run(tmp_path, "python", "import no_such_module\n") == [
        "page.md:3: exit status 1",
        "page.md:3: printed a traceback",
    ]


def test_an_error_line_fails_even_when_the_pipeline_exits_0(tmp_path: Path) -> None:
    # A command whose reader went away printed "error: ..." while `head` exited 0.
    code = "(echo 'error: BrokenPipeError: [Errno 32] Broken pipe' >&2; echo x) | head -1\n"

    assert _run(tmp_path, "sh", code) == [
        "page.md:3: printed 'error: BrokenPipeError: [Errno 32] Broken pipe'"
    ]


def test_a_long_running_example_passes_once_ready_and_ends_on_ctrl_c(tmp_path: Path) -> None:
    assert _run(tmp_path, "sh", "echo starting\necho ready\nsleep 600\n", until="ready") == []
    assert (
        _run(
            tmp_path,
            "python",
            "import time\nprint('ready', flush=True)\ntime.sleep(600)\n",
            until="ready",
        )
        == []
    )


def test_a_long_running_example_that_ends_before_it_is_ready_fails(tmp_path: Path) -> None:
    assert _run(tmp_path, "sh", "echo starting\nexit 2\n", until="ready") == [
        "page.md:3: ended with exit status 2 before it printed 'ready'"
    ]
    assert _run(tmp_path, "python", "print('started')\n", until="ready") == [
        "page.md:3: ended with exit status 0 before it printed 'ready'"
    ]


def test_what_an_example_started_in_the_background_is_stopped_with_it(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"

    assert _run(tmp_path, "sh", f"sleep 600 &\necho $! > {pid_file}\n") == []
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)


def test_a_notice_of_nothing_wrong_from_spark_fails_the_example(tmp_path: Path) -> None:
    code = "echo 'WARN Utils: Your hostname, h resolves to a loopback address: 127.0.1.1' >&2\n"
    assert _run(tmp_path, "sh", code) == [
        "page.md:3: printed Spark's notice 'resolves to a loopback address' (nothing is wrong)"
    ]
