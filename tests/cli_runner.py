"""Running the installed `graphrag-tui` command as a user would."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

EXECUTABLE = str(Path(sys.executable).parent / "graphrag-tui")
#: The user data directory of the commands the tests run: their default run history goes
#: here, never into the developer's own.
TEST_DATA_HOME = tempfile.mkdtemp(prefix="graphrag-tui-test-data-")
atexit.register(shutil.rmtree, TEST_DATA_HOME, ignore_errors=True)


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without the user's graphrag-tui settings or API keys."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHRAG_TUI_") and k != "OPENAI_API_KEY"}
    env["XDG_DATA_HOME"] = TEST_DATA_HOME
    env.update(extra)
    return env


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str

    @property
    def json(self) -> Any:
        return json.loads(self.stdout)


def run_cli(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> Run:
    done = subprocess.run(
        [EXECUTABLE, *args],
        capture_output=True,
        text=True,
        env=clean_env() if env is None else env,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    return Run(done.returncode, done.stdout, done.stderr)
