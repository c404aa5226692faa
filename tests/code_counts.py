"""The code's ownership counts (issue 53): ``python -m tests.code_counts`` prints them.

Each is read from the source alone (``ast``), nothing is imported:

- the methods of the largest store class (``RedisStore`` with the bases it inherits
  from ``collection_manager/storage``);
- the call sites that page a change log (``xrange``, ``xrevrange``, ``xread``);
- the raw hash commands (``hget``, ``hset``, ...) in product files outside
  ``collection_manager/storage/`` and ``collection_manager/control/``;
- the benchmark files outside the import-layer contract (every ``bench/*.py`` while
  ``bench`` is not one of its root packages);
- the product files over ``MAX_FILE_LINES`` and the functions over ``MAX_FUNCTION_LINES``.
"""

from __future__ import annotations

import ast
import functools
import tomllib
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = ("collection_manager", "producers", "spark_consumers", "schemas")
# Where a Redis hash may be read or written by name: the modules that own the records.
HASH_OWNERS = ("collection_manager/storage/", "collection_manager/control/")
HASH_COMMANDS = frozenset(
    {
        "hget",
        "hset",
        "hsetnx",
        "hmset",
        "hgetall",
        "hmget",
        "hdel",
        "hincrby",
        "hincrbyfloat",
        "hkeys",
        "hvals",
        "hlen",
        "hexists",
        "hscan",
        "hscan_iter",
        "hstrlen",
    }
)
LOG_PAGING = frozenset({"xrange", "xrevrange", "xread"})
MAX_FILE_LINES = 300
MAX_FUNCTION_LINES = 40


def product_files(root: Path = ROOT) -> Iterator[Path]:
    """Every Python file of the product under ``root``, sorted."""
    for package in PRODUCT:
        yield from sorted((root / package).rglob("*.py"))


def _relative(path: Path, root: Path = ROOT) -> str:
    return path.relative_to(root).as_posix()


@functools.cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


def _called(tree: ast.AST, names: frozenset[str]) -> Iterator[tuple[int, str]]:
    """``(line, name)`` of each call ``x.name(...)`` with ``name`` in ``names``."""
    for node in ast.walk(tree):
        func = node.func if isinstance(node, ast.Call) else None
        if isinstance(func, ast.Attribute) and func.attr in names:
            yield func.lineno, func.attr


def raw_hash_calls(root: Path = ROOT) -> dict[str, int]:
    """Product file -> how many raw hash commands it calls, outside the owners."""
    found: dict[str, int] = {}
    for path in product_files(root):
        name = _relative(path, root)
        if name.startswith(HASH_OWNERS):
            continue
        count = sum(1 for _ in _called(_tree(path), HASH_COMMANDS))
        if count:
            found[name] = count
    return found


def log_paging_sites() -> list[str]:
    """``file:line`` of every call that pages a change log, in the product and bench/."""
    files = [*product_files(), *sorted((ROOT / "bench").rglob("*.py"))]
    return [
        f"{_relative(path)}:{line}"
        for path in files
        for line, _ in _called(_tree(path), LOG_PAGING)
    ]


def _classes(package: Path) -> dict[str, ast.ClassDef]:
    classes: dict[str, ast.ClassDef] = {}
    for path in sorted(package.rglob("*.py")):
        for node in _tree(path).body:
            if isinstance(node, ast.ClassDef):
                classes.setdefault(node.name, node)
    return classes


def store_methods(name: str = "RedisStore") -> list[str]:
    """The methods of storage class ``name``, its own and those of its storage bases."""
    classes = _classes(ROOT / "collection_manager" / "storage")
    methods: list[str] = []
    todo = [name]
    while todo:
        node = classes.get(todo.pop())
        if node is None:
            continue
        for item in node.body:
            method = item if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) else None
            if method is not None and method.name not in methods:
                methods.append(method.name)
        todo.extend(base.id for base in node.bases if isinstance(base, ast.Name))
    return methods


def bench_outside_contract() -> list[str]:
    """The bench/ files no import-layer contract covers."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    roots = config["tool"]["importlinter"]["root_packages"]
    if "bench" in roots:
        return []
    return [_relative(path) for path in sorted((ROOT / "bench").rglob("*.py"))]


def long_files() -> dict[str, int]:
    """Product file -> its lines, of those over ``MAX_FILE_LINES``."""
    lengths = {_relative(p): len(p.read_text().splitlines()) for p in product_files()}
    return {name: n for name, n in lengths.items() if n > MAX_FILE_LINES}


def long_functions() -> dict[str, int]:
    """``file:function`` -> its lines, of the product's functions over ``MAX_FUNCTION_LINES``."""
    found: dict[str, int] = {}
    for path in product_files():
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                assert node.end_lineno is not None
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    found[f"{_relative(path)}:{node.name}"] = lines
    return found


def counts() -> dict[str, int]:
    """Each count by name."""
    return {
        "RedisStore methods": len(store_methods()),
        "call sites paging a change log": len(log_paging_sites()),
        "raw hash commands outside storage/ and control/": sum(raw_hash_calls().values()),
        "files with raw hash commands outside storage/ and control/": len(raw_hash_calls()),
        "bench files outside the import contract": len(bench_outside_contract()),
        f"product files over {MAX_FILE_LINES} lines": len(long_files()),
        f"product functions over {MAX_FUNCTION_LINES} lines": len(long_functions()),
    }


def main() -> None:
    """Prints the counts, then what each is made of."""
    for name, value in counts().items():
        print(f"{value:5d}  {name}")
    print("\nraw hash commands:", raw_hash_calls())
    print("log paging:", log_paging_sites())
    print("long files:", long_files())
    print("long functions:", long_functions())


if __name__ == "__main__":
    main()
