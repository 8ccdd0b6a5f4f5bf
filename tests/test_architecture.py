"""The static checks CI runs through pytest: the engine's layering (import-linter, the
contract in pyproject.toml), ruff on the code and the tests, and mypy strict on the engine."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
TUI_CONTRACT = "The app reads the store through its API: no sqlite3 under graphrag_tui.tui"
IMPORTER_CONTRACT = "The importer writes through the store: no sqlite3 under graphrag_tui.importer"
STORE_CONTRACT = "The store is below the faces: no session, model, importer or face"
LIMIT = 300  # seconds: mypy's first run, without a cache, on a loaded machine


def run(command: list[str], cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """A tool on this checkout (not on whatever graphrag_tui is installed)."""
    env = {**os.environ, "PYTHONPATH": str(cwd)}
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=LIMIT)


def lint_imports(cwd: Path) -> subprocess.CompletedProcess[str]:
    return run([str(BIN / "lint-imports"), "--no-cache", "--no-logo"], cwd)


def test_the_engine_imports_no_model_store_face_sqlite3_or_textual() -> None:
    checked = lint_imports(ROOT)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "The engine is headless: no model, store, face, sqlite3 or textual KEPT" in checked.stdout
    assert f"{TUI_CONTRACT} KEPT" in checked.stdout
    assert f"{IMPORTER_CONTRACT} KEPT" in checked.stdout
    assert f"{STORE_CONTRACT} KEPT" in checked.stdout
    assert checked.stdout.rstrip().endswith("Contracts: 4 kept, 0 broken.")


def test_the_contract_breaks_when_an_engine_module_imports_sqlite3(tmp_path: Path) -> None:
    """The contract is not vacuous: one `import sqlite3` in the engine breaks it."""
    shutil.copytree(ROOT / "graphrag_tui", tmp_path / "graphrag_tui", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    corpus = tmp_path / "graphrag_tui" / "engine" / "corpus.py"
    corpus.write_text(corpus.read_text() + "\nimport sqlite3  # noqa: E402\n")
    line = len(corpus.read_text().splitlines())
    checked = lint_imports(tmp_path)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert "graphrag_tui.engine is not allowed to import sqlite3:" in checked.stdout
    assert f"-   graphrag_tui.engine.corpus -> sqlite3 (l.{line})" in checked.stdout
    assert "The engine is headless: no model, store, face, sqlite3 or textual BROKEN" in checked.stdout
    assert "Contracts: 3 kept, 1 broken." in checked.stdout


@pytest.mark.parametrize(
    ("module", "imported", "contract"),
    [
        ("tui/screens/community.py", "sqlite3", TUI_CONTRACT),
        ("importer/writer.py", "sqlite3", IMPORTER_CONTRACT),
        ("store/schema.py", "textual", STORE_CONTRACT),
    ],
)
def test_the_layer_contracts_break_on_a_forbidden_import(
    tmp_path: Path, module: str, imported: str, contract: str
) -> None:
    """Only the store speaks SQLite, and the store sits below the faces: one forbidden
    import breaks its contract (and only that one)."""
    shutil.copytree(ROOT / "graphrag_tui", tmp_path / "graphrag_tui", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    source = tmp_path / "graphrag_tui" / module
    source.write_text(source.read_text() + f"\nimport {imported}  # noqa: E402\n")
    line = len(source.read_text().splitlines())
    dotted = "graphrag_tui." + module.removesuffix(".py").replace("/", ".")
    checked = lint_imports(tmp_path)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert f"-   {dotted} -> {imported} (l.{line})" in checked.stdout
    assert f"{contract} BROKEN" in checked.stdout
    assert "Contracts: 3 kept, 1 broken." in checked.stdout


def test_ruff_finds_nothing() -> None:
    checked = run([str(BIN / "ruff"), "check", "--no-cache", "graphrag_tui", "tests"])
    assert (checked.returncode, checked.stdout, checked.stderr) == (0, "All checks passed!\n", "")


def test_mypy_strict_finds_nothing_in_the_engine(tmp_path: Path) -> None:
    checked = run([sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path), "graphrag_tui/engine"])
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert re.fullmatch(r"Success: no issues found in \d+ source files\n", checked.stdout), checked.stdout
