"""The static checks CI runs through pytest: the layering (import-linter, the contracts in
pyproject.toml), ruff on the code and the tests, and mypy strict on the engine."""

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
LIMIT = 300  # seconds: mypy's first run, without a cache, on a loaded machine


def run(command: list[str], cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """A tool on this checkout (not on whatever graphrag_tui is installed)."""
    env = {**os.environ, "PYTHONPATH": str(cwd)}
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=LIMIT)


def lint_imports(cwd: Path) -> subprocess.CompletedProcess[str]:
    return run([str(BIN / "lint-imports"), "--no-cache", "--no-logo"], cwd)


ENGINE = "The engine is headless: no model, store, face, sqlite3 or textual"
SESSION = "The session layer is headless: no face, no textual"
STORE = "The store knows no face, session, model, importer or textual"
MODELS = "The models know no face, session, store or textual"
LAYERS = "Layers: the faces over the session over the adapters over the engine"
TUI_CONTRACT = "The app reads the store through its API: no sqlite3 under graphrag_tui.tui"
IMPORTER_CONTRACT = "The importer writes through the store: no sqlite3 under graphrag_tui.importer"
HISTORY = "The history knows no face, session, model, store, importer or textual"
SQLITE_CONTRACT = "Only the store and the history speak SQLite (not session, services, CLI)"
POSTGRES_CONTRACT = "Only the store speaks PostgreSQL: no psycopg above it"
CONTRACTS = (ENGINE, SESSION, STORE, MODELS, HISTORY, LAYERS, TUI_CONTRACT, SQLITE_CONTRACT, IMPORTER_CONTRACT,
             POSTGRES_CONTRACT)


def verdicts(stdout: str) -> dict[str, str]:
    """Each contract's KEPT or BROKEN, from lint-imports' summary."""
    found = {}
    for line in stdout.splitlines():
        name, _, verdict = line.rpartition(" ")
        if name in CONTRACTS and verdict in ("KEPT", "BROKEN"):
            found[name] = verdict
    return found


def broken_copy(tmp_path: Path, module: str, line: str) -> tuple[subprocess.CompletedProcess[str], int]:
    """lint-imports on a copy of the package where `module` (a path under graphrag_tui/) ends
    with `line`; also the number of that line."""
    shutil.copytree(ROOT / "graphrag_tui", tmp_path / "graphrag_tui", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    source = tmp_path / "graphrag_tui" / module
    source.write_text(source.read_text() + f"\n{line}  # noqa: E402\n")
    return lint_imports(tmp_path), len(source.read_text().splitlines())


def test_every_layering_contract_is_kept() -> None:
    checked = lint_imports(ROOT)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert verdicts(checked.stdout) == dict.fromkeys(CONTRACTS, "KEPT")
    assert checked.stdout.rstrip().endswith(f"Contracts: {len(CONTRACTS)} kept, 0 broken.")


def test_the_contract_breaks_when_an_engine_module_imports_sqlite3(tmp_path: Path) -> None:
    """The contract is not vacuous: one `import sqlite3` in the engine breaks it."""
    checked, line = broken_copy(tmp_path, "engine/corpus.py", "import sqlite3")
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert "graphrag_tui.engine is not allowed to import sqlite3:" in checked.stdout
    assert f"-   graphrag_tui.engine.corpus -> sqlite3 (l.{line})" in checked.stdout
    assert verdicts(checked.stdout) == {**dict.fromkeys(CONTRACTS, "KEPT"), ENGINE: "BROKEN"}
    assert f"Contracts: {len(CONTRACTS) - 1} kept, 1 broken." in checked.stdout


@pytest.mark.parametrize(
    ("module", "line", "contract", "complaint", "chain"),
    [
        # Each new contract, broken by one import the others let through.
        ("session/run_failure.py", "import textual", SESSION,
         "graphrag_tui.session is not allowed to import textual:",
         "-   graphrag_tui.session.run_failure -> textual"),
        ("store/schema.py", "from graphrag_tui.models import factory", STORE,
         "graphrag_tui.store is not allowed to import graphrag_tui.models:",
         "-   graphrag_tui.store.schema -> graphrag_tui.models.factory"),
        ("models/gguf.py", "from graphrag_tui.store import store", MODELS,
         "graphrag_tui.models is not allowed to import graphrag_tui.store:",
         "-   graphrag_tui.models.gguf -> graphrag_tui.store.store"),
        ("tui/run_state.py", "from graphrag_tui import cli", LAYERS,
         "graphrag_tui.tui is not allowed to import graphrag_tui.cli:",
         "- graphrag_tui.tui.run_state -> graphrag_tui.cli"),
        ("tui/screens/community.py", "import sqlite3", TUI_CONTRACT,
         "graphrag_tui.tui is not allowed to import sqlite3:",
         "-   graphrag_tui.tui.screens.community -> sqlite3"),
        ("importer/writer.py", "import sqlite3", IMPORTER_CONTRACT,
         "graphrag_tui.importer is not allowed to import sqlite3:",
         "-   graphrag_tui.importer.writer -> sqlite3"),
        ("store/schema.py", "from graphrag_tui.importer import api", STORE,
         "graphrag_tui.store is not allowed to import graphrag_tui.importer:",
         "-   graphrag_tui.store.schema -> graphrag_tui.importer.api"),
        ("history/ids.py", "from graphrag_tui.store import store", HISTORY,
         "graphrag_tui.history is not allowed to import graphrag_tui.store:",
         "-   graphrag_tui.history.ids -> graphrag_tui.store.store"),
        ("session/recording.py", "import sqlite3", SQLITE_CONTRACT,
         "graphrag_tui.session is not allowed to import sqlite3:",
         "-   graphrag_tui.session.recording -> sqlite3"),
        ("tui/screens/community.py", "import psycopg", POSTGRES_CONTRACT,
         "graphrag_tui.tui is not allowed to import psycopg:",
         "-   graphrag_tui.tui.screens.community -> psycopg"),
    ],
    ids=["session-imports-textual", "store-imports-models", "models-import-the-store", "the-app-imports-the-cli",
         "the-app-imports-sqlite3", "the-importer-imports-sqlite3", "the-store-imports-the-importer",
         "the-history-imports-the-store", "the-session-imports-sqlite3", "the-app-imports-psycopg"],
)
def test_each_new_contract_breaks_when_violated(
    tmp_path: Path, module: str, line: str, contract: str, complaint: str, chain: str
) -> None:
    checked, number = broken_copy(tmp_path, module, line)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert verdicts(checked.stdout) == {**dict.fromkeys(CONTRACTS, "KEPT"), contract: "BROKEN"}
    assert complaint in checked.stdout.splitlines()
    assert f"{chain} (l.{number})" in checked.stdout.splitlines()
    assert f"Contracts: {len(CONTRACTS) - 1} kept, 1 broken." in checked.stdout


def test_ruff_finds_nothing() -> None:
    checked = run([str(BIN / "ruff"), "check", "--no-cache", "graphrag_tui", "tests"])
    assert (checked.returncode, checked.stdout, checked.stderr) == (0, "All checks passed!\n", "")


def test_mypy_strict_finds_nothing_in_the_engine(tmp_path: Path) -> None:
    checked = run([sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path), "graphrag_tui/engine"])
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert re.fullmatch(r"Success: no issues found in \d+ source files\n", checked.stdout), checked.stdout
