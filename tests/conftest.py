"""Fixtures shared by every test: a throwaway PostgreSQL cluster and its databases; the user
data folder.

`postgres_cluster` starts one cluster for the whole session (tests/postgres_cluster.py) and
stops it at the end. Where no cluster can start (PostgreSQL or psycopg missing), the tests
that use it skip with the reason in one line; with CI=true they fail instead, so that CI
never passes without running them.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.cli_runner import TEST_DATA_HOME
from tests.postgres_cluster import ClusterUnavailable, PostgresCluster, start_cluster

_database_numbers = itertools.count(1)

# The user data folder of the code the tests run in this process, as of the commands they run
# (cli_runner.clean_env): the run history's seal key (history/seal.py) is the same in both, and
# never the developer's own.
os.environ["XDG_DATA_HOME"] = TEST_DATA_HOME


def _unavailable(reason: str) -> None:
    message = f"PostgreSQL tests cannot run: {reason}"
    if os.environ.get("CI") == "true":
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def import_psycopg() -> Any:
    """psycopg for a test module that uses it directly: without it the module is skipped
    (in CI it fails, as the cluster fixture does)."""
    try:
        import psycopg
    except ImportError:
        if os.environ.get("CI") == "true":
            raise
        pytest.skip("PostgreSQL tests cannot run: psycopg is not installed (pip install 'psycopg[binary]')",
                    allow_module_level=True)
    return psycopg


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[PostgresCluster]:
    try:
        import psycopg  # noqa: F401
    except ImportError:
        _unavailable("psycopg is not installed (pip install 'psycopg[binary]')")
    try:
        cluster = start_cluster()
    except ClusterUnavailable as error:
        _unavailable(str(error))
    try:
        yield cluster
    finally:
        cluster.stop()


@dataclass(frozen=True)
class PgDatabase:
    """One database of the test cluster."""

    cluster: PostgresCluster
    name: str

    @property
    def url(self) -> str:
        """The reader's URL (SELECT only, password in it)."""
        return self.cluster.url(self.name)

    @property
    def admin_url(self) -> str:
        """The superuser's URL (password in it): for writing."""
        return self.cluster.admin_url(self.name)

    @property
    def passwords(self) -> tuple[str, str]:
        return self.cluster.reader_password, self.cluster.admin_password

    def admin_connect(self):  # type: ignore[no-untyped-def]
        """An autocommit superuser connection through the cluster's socket."""
        import psycopg

        return psycopg.connect(self.cluster.admin_conninfo(self.name), autocommit=True)


def _fresh_database(cluster: PostgresCluster, *, icu_locale: str | None = None) -> PgDatabase:
    name = f"t{os.getpid()}_{next(_database_numbers)}"
    cluster.create_database(name, icu_locale=icu_locale)
    return PgDatabase(cluster, name)


@pytest.fixture
def pg_database(postgres_cluster: PostgresCluster) -> Iterator[PgDatabase]:
    """A fresh empty database, dropped after the test."""
    database = _fresh_database(postgres_cluster)
    try:
        yield database
    finally:
        postgres_cluster.drop_database(database.name)


def create_graphrag_ts_tables(database: PgDatabase) -> None:
    from graphrag_tui.store.pg_schema import create_graphrag_ts_schema

    with database.admin_connect() as conn, conn.transaction():
        create_graphrag_ts_schema(conn)


@pytest.fixture
def graphrag_ts_database(pg_database: PgDatabase) -> PgDatabase:
    """A fresh database with graphrag-ts's tables (no rows), dropped after the test."""
    create_graphrag_ts_tables(pg_database)
    return pg_database


@pytest.fixture
def sample_pg(pg_database: PgDatabase) -> PgDatabase:
    """The bundled sample store copied into graphrag-ts's tables (with all their constraints)."""
    from tests.pg_stores import SAMPLE, copy_sqlite_to_postgres

    copy_sqlite_to_postgres(SAMPLE, pg_database, strict=True)
    return pg_database


@pytest.fixture
def icu_database(postgres_cluster: PostgresCluster) -> Iterator[PgDatabase]:
    """Like pg_database, in a database whose default collation is ICU's en-US (where "a" < "B"
    and "_x" < "10", unlike code point order)."""
    database = _fresh_database(postgres_cluster, icu_locale="en-US")
    try:
        yield database
    finally:
        postgres_cluster.drop_database(database.name)

#: open_as(sqlite_path, indexes=True, keys=True) -> an open store with that file's rows
#: (on PostgreSQL, `keys` False drops the tables' primary keys too).
OpenAs = Callable[..., Any]


@pytest.fixture(params=["sqlite", "postgres"])
def open_as(request: pytest.FixtureRequest) -> Iterator[OpenAs]:
    """The store-level tests on both backends: the test builds an SQLite file; on
    "postgres" its rows are copied into a fresh database (graphrag-ts's columns without
    its constraints: tests/pg_stores.py) and the store is opened from there."""
    from graphrag_tui.store import CommunityStore
    from graphrag_tui.store.opening import open_store

    opened: list[Any] = []
    databases: list[PgDatabase] = []

    def open_(path: Path, *, indexes: bool = True, keys: bool = True) -> Any:
        if request.param == "sqlite":
            store = CommunityStore.open(path)
        else:
            from tests.pg_stores import copy_sqlite_to_postgres

            database = _fresh_database(request.getfixturevalue("postgres_cluster"))
            databases.append(database)
            copy_sqlite_to_postgres(path, database, strict=False, indexes=indexes, keys=keys)
            store = open_store(database.url)
        opened.append(store)
        return store

    try:
        yield open_
    finally:
        for store in opened:
            store.close()
        for database in databases:
            database.cluster.drop_database(database.name)
