"""Opening a store wherever it lives: the one `open_store` of the CLI, the session and the app."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from graphrag_tui.store.location import PostgresLocation, StoreLocation, parse_location
from graphrag_tui.store.store import CommunityStore


def open_store(location: StoreLocation | str, *, stop_when: Callable[[], bool] | None = None) -> CommunityStore:
    """Open a store read-only: an SQLite file (`CommunityStore.open`) or a PostgreSQL
    database (`PostgresStore.open`; needs the `postgres` extra). Errors are InputError /
    StoreError, one line, a URL's password masked. `stop_when`: the caller's "stop" (copy's
    Ctrl+C), from the open on (`CommunityStore.stop_when`)."""
    if isinstance(location, str):
        location = parse_location(location)
    if isinstance(location, PostgresLocation):
        from graphrag_tui.store.postgres import PostgresStore  # psycopg only when a URL is given

        return PostgresStore.open(location, stop_when=stop_when)
    store = CommunityStore.open(Path(location))
    if stop_when is not None:
        store.stop_when = stop_when
    return store
