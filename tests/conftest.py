"""Fixtures shared by every test: a throwaway PostgreSQL cluster and its databases.

`postgres_cluster` starts one cluster for the whole session (tests/postgres_cluster.py) and
stops it at the end. Where no cluster can start (PostgreSQL or psycopg missing), the tests
that use it skip with the reason in one line; with CI=true they fail instead, so that CI
never passes without running them.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.postgres_cluster import ClusterUnavailable, PostgresCluster, start_cluster

_database_numbers = itertools.count(1)


def _unavailable(reason: str) -> None:
    message = f"PostgreSQL tests cannot run: {reason}"
    if os.environ.get("CI") == "true":
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


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
def icu_graphrag_ts_database(postgres_cluster: PostgresCluster) -> Iterator[PgDatabase]:
    """Like graphrag_ts_database, in a database whose default collation is ICU's en-US."""
    database = _fresh_database(postgres_cluster, icu_locale="en-US")
    try:
        create_graphrag_ts_tables(database)
        yield database
    finally:
        postgres_cluster.drop_database(database.name)
