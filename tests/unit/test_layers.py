"""The import-layer contracts in pyproject.toml hold, and break when an arrow points up."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("collection_manager", "producers", "spark_consumers", "schemas", "tests", "bench")
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint_imports(tree: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(tree / "pyproject.toml"), "--no-cache"],
        cwd=tree,
        env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of the packages and pyproject.toml that a test may break."""
    for package in PACKAGES:
        shutil.copytree(
            ROOT / package,
            tmp_path / package,
            ignore=shutil.ignore_patterns("*.pyc", "__pycache__"),
        )
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    return tmp_path


def _add_import(module: Path, statement: str) -> None:
    module.write_text(module.read_text() + f"\n{statement}  # pointing up\n")


def test_the_tree_keeps_every_contract(tree: Path) -> None:
    done = _lint_imports(tree)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


@pytest.mark.parametrize(
    ("module", "statement", "contract"),
    [
        ("collection_manager/core/specs.py", "import schemas.codec", "Layers"),
        ("collection_manager/storage/rows.py", "import collection_manager.control", "Layers"),
        ("producers/batching.py", "import spark_consumers.decode", "Layers"),
        ("spark_consumers/decode.py", "import tests.model.model", "test support"),
        ("collection_manager/reading/status.py", "import bench.capacity_model", "its benchmarks"),
        ("bench/capacity_model.py", "import tests.support", "Benchmarks use the product"),
    ],
)
def test_an_import_pointing_up_breaks_the_build(
    tree: Path, module: str, statement: str, contract: str
) -> None:
    _add_import(tree / module, statement)
    done = _lint_imports(tree)
    assert done.returncode != 0
    assert "1 broken" in done.stdout or "2 broken" in done.stdout
    broken = done.stdout.split("Broken contracts", 1)[1]
    assert contract in broken
    assert statement.split()[-1] in broken
