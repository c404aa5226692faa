"""What an install of each role weighs and takes (issue 51), against the same run's baseline:
the plain install of a revision before the roles were split (``--baseline``), which carried
Spark, pandas and Arrow everywhere.

The wheels of this work tree and of the baseline are built from copies (nothing is left in
the checkout), every dependency is turned into a wheel once (``pip wheel``: pyspark is an
sdist on PyPI), and then each install runs from those local wheels alone (``--no-index``)
into a fresh venv: the time is the install's own, not the network's. The size is what the
install added to the venv's site-packages (an empty venv's pip subtracted).

    .venv/bin/python -m bench.install_size            # baseline: 381773e
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import venv
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The last commit whose plain install was the whole product.
BASELINE = "381773e"
# (label, which wheel, extras)
INSTALLS = (
    ("core (pip install collection-manager)", "tree", ""),
    ("[server]", "tree", "server"),
    ("[all]", "tree", "all"),
    ("baseline: the plain install at {baseline}", "baseline", ""),
)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default=BASELINE, help=f"a revision (default {BASELINE})")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="cm-install-size-") as scratch:
        work = Path(scratch)
        wheels = {"tree": _tree_wheel(work), "baseline": _baseline_wheel(work, args.baseline)}
        house = work / "wheelhouse"
        for wheel in wheels.values():
            # Every dependency of every role, as wheels, once; the installs below use them.
            _run([sys.executable, "-m", "pip", "wheel", "-q", "-w", house, f"{wheel}[all]"])
        empty = _site_bytes(_venv(work / "empty"))
        print(f"load average before: {_load()}")
        print("| install | installed size | distributions | install time |")
        print("|---|---|---|---|")
        for label, which, extras in INSTALLS:
            python = _venv(work / f"venv-{len(list(work.iterdir()))}")
            target = f"{wheels[which]}[{extras}]" if extras else str(wheels[which])
            began = time.monotonic()
            _run([python, "-m", "pip", "install", "-q", "--no-index", "-f", house, target])
            took = time.monotonic() - began
            size = _site_bytes(python) - empty
            count = len(_run([python, "-m", "pip", "list", "--format=freeze"]).stdout.split())
            print(
                f"| {label.format(baseline=args.baseline)} | {size / 2**20:,.0f} MiB "
                f"| {count} | {took:.1f} s |"
            )
        print(f"load average after: {_load()}")
    return 0


def _tree_wheel(work: Path) -> Path:
    """The wheel of the work tree as it is, built in a copy."""
    source = work / "tree"
    listed = _run(["git", "-C", ROOT, "ls-files", "-co", "--exclude-standard"]).stdout
    for name in filter(None, listed.split("\n")):
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    return _wheel(source, work / "dist-tree")


def _baseline_wheel(work: Path, revision: str) -> Path:
    source = work / "baseline"
    source.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", revision], capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(source)], input=archive.stdout, check=True)
    return _wheel(source, work / "dist-baseline")


def _wheel(source: Path, out: Path) -> Path:
    _run([sys.executable, "-m", "build", "--wheel", "--outdir", out, source])
    (wheel,) = out.glob("*.whl")
    return wheel


def _venv(where: Path) -> Path:
    venv.create(where, with_pip=True)
    return where / "bin" / "python"


def _site_bytes(python: Path) -> int:
    (site,) = (python.parent.parent / "lib").glob("python3*/site-packages")
    return sum(f.stat().st_size for f in site.rglob("*") if f.is_file() and not f.is_symlink())


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _run(argv: Sequence[object]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(a) for a in argv], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, argv))} failed:\n{done.stderr[-3000:]}")
    return done


if __name__ == "__main__":
    sys.exit(main())
