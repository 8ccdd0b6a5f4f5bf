"""Where a store lives (store/location.py) and the SQLite reads as PostgreSQL runs them
(store/pg_dialect.py): no server needed."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphrag_tui.errors import InputError
from graphrag_tui.store.location import (
    PostgresLocation,
    display_location,
    mask_urls,
    parse_location,
    store_files,
    store_identity,
)
from graphrag_tui.store.pg_dialect import UnportableSQL, to_postgres


@pytest.mark.parametrize(("given", "shown"), [
    ("postgresql://alice:s3cr%40t@db.example:5433/graph", "postgresql://alice:***@db.example:5433/graph"),
    ("postgres://bob@localhost/x", "postgresql://bob@localhost/x"),
    ("postgresql:///graph", "postgresql:///graph"),
    ("POSTGRESQL://u:p@h/d?sslmode=require&password=zz", "postgresql://u:***@h/d?sslmode=require&password=***"),
    ("postgresql://[::1]:5432/d", "postgresql://[::1]:5432/d"),
    ("postgresql://h/d?user=carol&password=pw", "postgresql://carol:***@h/d?password=***"),
    # libpq takes the query's host, port and dbname over the URL's own: a re-run of the
    # recorded URL went to the host libpq never used (found by a probe)
    ("postgresql://leaky@no-such-host.invalid:45705/base?host=127.0.0.1", "postgresql://leaky@127.0.0.1:45705/base"),
    ("postgresql://u:p@prod.example:1/other?port=45705&dbname=base&host=127.0.0.1&sslmode=disable",
     "postgresql://u:***@127.0.0.1:45705/base?sslmode=disable"),
    ("postgresql:///graph?host=/var/run/postgresql", "postgresql:///graph?host=/var/run/postgresql"),
])
def test_a_url_is_shown_masked_in_every_form(given: str, shown: str) -> None:
    location = parse_location(given)
    assert isinstance(location, PostgresLocation)
    assert (str(location), repr(location), display_location(location)) == (shown, f"PostgresLocation({shown!r})", shown)
    assert location.url == given
    assert store_identity(location) == shown and store_files(location) == []


def test_a_recorded_url_leaves_the_password_to_libpq() -> None:
    assert parse_location("postgresql://alice:***@db.example:5433/graph").url == "postgresql://alice@db.example:5433/graph"


@pytest.mark.parametrize(("recorded", "sent"), [
    ("postgresql://u:***@h:5/db?password=***", "postgresql://u@h:5/db"),
    ("postgresql://u:***@h:5/db?password=***&application_name=x", "postgresql://u@h:5/db?application_name=x"),
    ("postgresql://u:***@h:5/db?a=1&sslpassword=***&b=2", "postgresql://u@h:5/db?a=1&b=2"),
    ("postgresql://u@h:5/db?password=given", "postgresql://u@h:5/db?password=given"),
])
def test_a_recorded_urls_masked_password_parameter_is_left_out(recorded: str, sent: str) -> None:
    """It was sent as the password (`***`), over PGPASSWORD and ~/.pgpass: a re-run failed."""
    assert parse_location(recorded).url == sent  # type: ignore[union-attr]


def test_a_path_stays_a_path(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    assert parse_location(str(path)) == path
    assert store_files(path) == [path, *(tmp_path / f"store.db{s}" for s in ("-wal", "-shm", "-journal"))]


def test_a_bad_url_is_an_input_error_without_the_password() -> None:
    with pytest.raises(InputError) as error:
        parse_location("postgresql://bob:topsecret@h:99999999/d")
    assert "topsecret" not in str(error.value) and "bob:***@" in str(error.value)


def test_mask_urls_masks_every_url_in_a_text() -> None:
    text = "a postgresql://a:b@c@h:1/d and postgres://x:y%2F@z/db?password=q&sslpassword=r, end"
    # A parameter is masked up to the next & or space: a comma may be part of a password.
    assert mask_urls(text) == "a postgresql://a:***@h:1/d and postgres://x:***@z/db?password=***&sslpassword=*** end"
    # a quote in a value is part of it (the mask stopped there, and showed the rest); one
    # masked already keeps the colon after it
    assert mask_urls("""x postgresql://h/d?password=ab'cd"ef&a=1""") == "x postgresql://h/d?password=***&a=1"
    assert mask_urls("store postgresql://h/d?password=***: refused") == "store postgresql://h/d?password=***: refused"


def test_the_dialect_rewrites_the_sqlite_idioms() -> None:
    assert to_postgres(
        "SELECT id FROM t WHERE id IN (SELECT value FROM json_each(:ids)) AND typeof(name) = 'text' "
        "AND a IS NOT ? AND substr(id, -length(:suffix)) = :suffix AND n LIKE ? ESCAPE '\\\\' ORDER BY id COLLATE BINARY"
    ) == (
        "SELECT id FROM t WHERE id IN (SELECT json_array_elements_text(CAST(%(ids)s AS json))) AND name IS NOT NULL "
        "AND a IS DISTINCT FROM %s AND right(id, length(%(suffix)s)) = %(suffix)s AND n ILIKE %s ESCAPE '\\\\' "
        'ORDER BY id COLLATE "C"'
    )


@pytest.mark.parametrize("sql", ["PRAGMA table_info(x)", "SELECT CAST(a AS BLOB) FROM t",
                                 "SELECT group_concat(a) FROM t", "SELECT typeof(a) FROM t"])
def test_the_dialect_refuses_what_it_cannot_rewrite(sql: str) -> None:
    with pytest.raises(UnportableSQL):
        to_postgres(sql)


@pytest.mark.parametrize("given", [
    "postgresql://h/db?user=myuser%40myserver", "postgresql://myuser%40myserver:pw@h/db",
    "postgresql://u@h/x?dbname=a%3Fsslmode%3Ddisable", "postgresql://u@h/db?application_name=x%26sslmode%3Ddisable",
    "postgresql://u@h/db?host=a,b&port=1,2", "postgresql:///db?host=%2Fsock%20dir",
    "postgresql://u@h/db?options=-c%20search_path%3Dother", "postgresql://u@h/db?host=fe80::1%25eth0",
    "postgresql://u:p@[::1]:5432/d?sslmode=require",
])
def test_the_recorded_url_reads_back_as_the_same_connection(given: str) -> None:
    """Its parts were written back decoded: `user=myuser%40myserver` became a URL no parser
    takes, an encoded `?` in the database name added `sslmode=disable` to a re-run, a list
    of hosts changed (found by a re-probe)."""
    psycopg = pytest.importorskip("psycopg")

    def connection(url: str) -> dict[str, str]:
        return {k: v for k, v in psycopg.conninfo.conninfo_to_dict(url).items() if k != "password"}

    recorded = store_identity(parse_location(given))
    assert "pw" not in recorded and "p@" not in recorded
    assert connection(parse_location(recorded).url) == connection(given)
