"""Whether a run's endpoint and store were recorded by this user's graphrag-tui.

A re-run or a resume without model flags sends the key of the variable the run recorded to
the base URL it recorded, and opens the store it recorded (for a database, libpq adds the
password from PGPASSWORD or ~/.pgpass). A history from elsewhere (shared, downloaded,
edited) can name any endpoint, variable and database: the user's secrets would go to its
author. So each run's row is sealed as it is written: an HMAC-SHA256 of its id, store and
model settings under a key that stays in the user's data folder (history.key, mode 0600).
A run whose seal does not match (another user's history, an edited row, a run recorded
before seals) is re-run or resumed only on the model given on the command line, and its
database is not opened."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import secrets
import stat
import time
from pathlib import Path

from ..user_files import default_history_path

KEY_BYTES = 32


def key_path() -> Path:
    return default_history_path().with_name("history.key")


def seal_key(*, create: bool) -> bytes | None:
    """This user's key (made on first use when `create`); None when there is none or it
    cannot be read (nothing is then trusted)."""
    path = key_path()
    key = _read_key(path)
    if key is None and create:
        with contextlib.suppress(OSError):
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                os.write(descriptor, secrets.token_bytes(KEY_BYTES))
            finally:
                os.close(descriptor)
        key = _read_key(path)
    return key


def _read_key(path: Path) -> bytes | None:
    for _ in range(3):  # (another process may have made it and not yet written it)
        try:
            descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        except OSError:
            return None
        try:
            key = os.read(descriptor, KEY_BYTES + 1) if stat.S_ISREG(os.fstat(descriptor).st_mode) else b""
        except OSError:
            return None
        finally:
            os.close(descriptor)
        if key:
            break
        time.sleep(0.01)
    return key if len(key) == KEY_BYTES else None


def key_problem() -> str | None:
    """Why this user's key, which is there, cannot be used, naming its file (None: it can,
    or there is none: no run was recorded yet, or it could not be made)."""
    if seal_key(create=False) is not None:
        return None
    path = key_path()
    try:
        status = path.stat()
    except FileNotFoundError:
        return None
    except OSError as error:
        return f"{path} cannot be read ({error.strerror or error})"
    if not stat.S_ISREG(status.st_mode):
        return f"{path} is not a regular file"
    return f"{path} is not a key of {KEY_BYTES} bytes (it has {status.st_size:,})"


def seal(key: bytes, run_id: str, store: str, model_settings: str) -> str:
    message = json.dumps([run_id, store, model_settings]).encode("utf-8", "surrogatepass")
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def is_sealed(run_id: str, store: object, model_settings: object, recorded: object) -> bool:
    """Whether the row's seal is this user's seal of its id, store and settings."""
    if not all(isinstance(v, str) for v in (store, model_settings, recorded)):
        return False
    key = seal_key(create=False)
    return key is not None and hmac.compare_digest(seal(key, run_id, store, model_settings), recorded)  # type: ignore[arg-type]
