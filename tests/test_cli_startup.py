"""What the `runs` commands load before they answer: the history alone (no engine, pydantic,
httpx, textual, settings or models), unless a config file or a GRAPHRAG_TUI_* variable
could name another history, which is then read as every command reads it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.cli_runner import clean_env, run_cli
from tests.stores import three_leaves

HEAVY = ("pydantic", "pydantic_settings", "httpx", "textual", "graphrag_tui.engine", "graphrag_tui.config",
         "graphrag_tui.session", "graphrag_tui.models", "graphrag_tui.store")
PROBE = f"""
import sys
from graphrag_tui.cli import main
code = main(sys.argv[1:])
sys.stdout.flush()
print("loaded:", ",".join(m for m in {HEAVY!r} if m in sys.modules), "exit:", code, file=sys.stderr)
"""


def probe(*args: str, env: dict[str, str]) -> tuple[str, str]:
    """The command's stdout, and its last stderr line: what it loaded and its exit code."""
    done = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, env=env, timeout=60,
                          stdin=subprocess.DEVNULL)
    return done.stdout, done.stderr.strip().splitlines()[-1]


def recorded_run(store: Path, history: Path) -> str:
    done = run_cli("query", str(store), "Who funds the bridge?", "--history", str(history), "--json", "--no-config")
    assert done.code == 0, done.stderr
    return done.json["run_id"]


def test_runs_list_and_delete_load_no_engine_without_settings_to_read(tmp_path: Path) -> None:
    history = tmp_path / "h.db"
    run_id = recorded_run(three_leaves(tmp_path / "s.db"), history)
    env = clean_env(XDG_CONFIG_HOME=str(tmp_path / "no-config"))  # no config file there
    for args in (("runs", "--history", str(history)), ("runs", "list", "--history", str(history), "--no-config")):
        out, last = probe(*args, env=env)
        assert last == "loaded:  exit: 0"
        assert out.startswith(run_id) and "Who funds the bridge?" in out
    out, last = probe("runs", "delete", "zzz", "--history", str(history), env=env)
    assert last == "loaded:  exit: 2"
    out, last = probe("runs", "delete", run_id, "--history", str(history), env=env)
    assert (out, last) == (f"deleted run {run_id}\n", "loaded:  exit: 0")


def test_runs_list_reads_the_settings_when_a_config_file_or_variable_could_name_the_history(tmp_path: Path) -> None:
    history = tmp_path / "configured.db"
    run_id = recorded_run(three_leaves(tmp_path / "s.db"), history)
    config = tmp_path / "config" / "graphrag-tui" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(f'[history]\npath = "{history}"\n')
    out, last = probe("runs", "list", env=clean_env(XDG_CONFIG_HOME=str(tmp_path / "config")))
    assert out.startswith(run_id)
    assert "graphrag_tui.config" in last and last.endswith("exit: 0")
    out, last = probe("runs", "list", env=clean_env(XDG_CONFIG_HOME=str(tmp_path / "none"),
                                                    GRAPHRAG_TUI_HISTORY=str(history)))
    assert out.startswith(run_id)
    assert "graphrag_tui.config" in last and last.endswith("exit: 0")
    config.write_text("[history]\nenabled = 3\n")  # a bad config file is the same error as for every command
    out, last = probe("runs", "list", "--history", str(history), env=clean_env(XDG_CONFIG_HOME=str(tmp_path / "config")))
    assert last.endswith("exit: 2")
    assert run_cli("runs", "list", "--history", str(history),
                   env=clean_env(XDG_CONFIG_HOME=str(tmp_path / "config"))).stderr.startswith(
        f"graphrag-tui: error: config file {config}: [history] enabled")
