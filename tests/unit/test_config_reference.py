"""The configuration reference in docs/operations.md is the one the config classes render."""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path

import pytest

from collection_manager.config import settings as config
from collection_manager.config.reference import (
    CONFIG_CLASSES,
    END_MARKER,
    REGENERATE,
    START_MARKER,
    default_text,
    extract_reference,
    help_text,
    main,
    render_reference,
    replace_reference,
)
from collection_manager.core.errors import CollectionManagerError

OPERATIONS = Path(__file__).resolve().parents[2] / "docs" / "operations.md"


def test_the_operations_page_holds_the_generated_reference() -> None:
    documented = extract_reference(OPERATIONS.read_text())
    assert documented == render_reference(), (
        f"{OPERATIONS.name}'s configuration reference differs from the code; regenerate it "
        f"with: .venv/bin/{REGENERATE}"
    )


def test_every_setting_has_a_help_text() -> None:
    missing = [
        f"{cls.__name__}.{field.name}"
        for cls in CONFIG_CLASSES
        for field in dataclasses.fields(cls)
        if not help_text(field)
    ]
    assert missing == []


def test_every_config_class_is_in_the_reference() -> None:
    # A new settings class in config/settings.py must be added to CONFIG_CLASSES, or it goes
    # undocumented.
    defined = {
        cls
        for _, cls in inspect.getmembers(config, inspect.isclass)
        if dataclasses.is_dataclass(cls) and cls.__module__ == config.__name__
    }
    assert defined == set(CONFIG_CLASSES)


def test_every_setting_is_in_its_table_once() -> None:
    reference = render_reference()
    for cls in CONFIG_CLASSES:
        for field in dataclasses.fields(cls):
            assert reference.count(f"| `{config.env_name(field.name)}` |") == 1


def test_the_reference_does_not_depend_on_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    expected = render_reference()
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert render_reference() == expected
    assert "| `~/.cache/collection-manager` |" in expected
    # Rendering restores what it changed.
    assert config.InfraConfig().cache_dir == tmp_path / "cache" / "collection-manager"


def test_defaults_render_readably() -> None:
    home = Path("/home/someone")
    assert default_text(None, home) == "unset"
    assert default_text("", home) == "empty"
    assert default_text(False, home) == "`false`"
    assert default_text(500, home) == "`500`"
    assert default_text(home / ".cache" / "x", home) == "`~/.cache/x`"
    assert default_text(Path("/var/lib/x"), home) == "`/var/lib/x`"


def test_replacing_keeps_the_rest_of_the_document() -> None:
    document = f"# Title\n\n{START_MARKER}\nold\n{END_MARKER}\n\nAfter.\n"
    replaced = replace_reference(document, "new\n")
    assert replaced == f"# Title\n\n{START_MARKER}\nnew\n{END_MARKER}\n\nAfter.\n"
    assert extract_reference(replaced) == "new\n"
    with pytest.raises(CollectionManagerError, match="config-reference"):
        replace_reference("# No markers\n", "new\n")


def test_write_then_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = tmp_path / "operations.md"
    page.write_text(f"Intro.\n{START_MARKER}\nstale\n{END_MARKER}\n")
    assert main(["--check", str(page)]) == 1
    assert REGENERATE in capsys.readouterr().err
    assert main(["--write", str(page)]) == 0
    assert main(["--check", str(page)]) == 0
    assert page.read_text().startswith(f"Intro.\n{START_MARKER}\n<!-- Generated")
