"""Where a store lives: an SQLite file (a path) or a PostgreSQL database (a URL).

`parse_location` turns what the user gave as STORE into a `Path` or a `PostgresLocation`.
A `PostgresLocation` keeps the URL as given (the driver needs it, password and all) but
shows itself only masked, `postgresql://user:***@host:port/db`: `str()`, `repr()`, the
header, every error, the logs, JSON and the run history use `display_location`, so the
password is never shown in any form. `mask_urls` masks every PostgreSQL URL inside a text
(an argparse message, an error from elsewhere), the last guard of the CLI's output.

`postgresql:///db` (no host) leaves the host, user, password, port and TLS to libpq's
environment: PGHOST, PGPORT, PGUSER, PGPASSWORD, ~/.pgpass, PGSSLMODE and the rest.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl, quote, unquote, urlsplit

from graphrag_tui.errors import InputError
from graphrag_tui.output_paths import sqlite_files
from graphrag_tui.url_mask import MASK, SECRET_PARAMETERS, mask_url_secrets, mask_urls

SCHEMES = ("postgresql://", "postgres://")

# A URL whose password was masked, as the run history records it.
_MASKED_PASSWORD = re.compile(r"(?i)^(postgres(?:ql)?://[^\s/?#:@]*):\*\*\*@")
#: A recorded URL's masked password parameter, with the `&` after it (or the `?` before it).
_MASKED_PARAMETER = re.compile(r"(?i)(?:(?<=[?&])(?:ssl)?password=\*\*\*(?:&|(?=#)|$))")


def is_postgres_url(text: str) -> bool:
    return text[:13].lower().startswith(SCHEMES)


@dataclass(frozen=True)
class PostgresLocation:
    """A PostgreSQL store. `url` is secret: never show it (`masked` is what to show)."""

    url: str = field(repr=False)
    masked: str
    database: str

    def __str__(self) -> str:
        return self.masked

    def __repr__(self) -> str:
        return f"PostgresLocation({self.masked!r})"


StoreLocation = Path | PostgresLocation


def _check_unambiguous(url: str) -> None:
    """Refuses a URL whose user or password holds an unencoded `/`, `?`, `#` or `@`: libpq
    and a URL parser split it in different places, so the password was shown as a host, a
    port or a path (and with `#` libpq connected while the run history recorded half of it)."""
    rest = url.split("://", 1)[1]
    authority_end = min((i for i in map(rest.find, "/?#") if i >= 0), default=len(rest))
    authority = rest[:authority_end]
    libpq_end = min((i for i in map(rest.find, "@/") if i >= 0), default=len(rest))  # libpq's user-info scan
    path = rest[authority_end:].split("?", 1)[0] if rest[authority_end:authority_end + 1] == "/" else ""
    if (rest[libpq_end:libpq_end + 1] == "@" and "@" not in authority) or authority.count("@") > 1 or "@" in path:
        raise InputError(
            "Not a PostgreSQL URL this tool can read safely: its user or password seems to hold an unencoded "
            "'/', '?', '#' or '@'; percent-encode them (%2F, %3F, %23, %40) or give the password in PGPASSWORD "
            "or ~/.pgpass")
    pairs = rest.partition("?")[2].partition("#")[0].split("&")
    if any(key.partition("=")[0].lower() in SECRET_PARAMETERS and "=" not in following
           for key, following in zip(pairs, pairs[1:], strict=False)):  # (`password=ab&cd`: `cd` was shown twice)
        raise InputError(
            "Not a PostgreSQL URL this tool can read safely: its password (or sslpassword) parameter seems to "
            "hold an unencoded '&'; percent-encode it (%26) or give the password in PGPASSWORD or ~/.pgpass")


#: What a query's values may hold unencoded (a socket's folder, a list of hosts, an address).
_QUERY_SAFE = "/:@,"


def _masked_url(url: str) -> tuple[str, str]:
    """(the URL masked as postgresql://user:***@host:port/db, the database name)."""
    _check_unambiguous(url)
    try:
        parts = urlsplit(url)
        port = parts.port
        host = parts.hostname or ""
        user = unquote(parts.username) if parts.username is not None else ""
        has_password = parts.password is not None
        query = parse_qsl(parts.query, keep_blank_values=True)
    except ValueError:
        raise InputError(f"Not a PostgreSQL URL: {mask_url_secrets(mask_urls(url), url)}") from None
    # libpq takes the query's user, host, port and dbname over the URL's own: they are shown
    # (and recorded) where the URL's would be (`?host=` was dropped, and a re-run went to the other host)
    given = dict(query)
    database = given.get("dbname", unquote(parts.path.lstrip("/")))
    user = given.get("user", user)
    has_password = has_password or any(k.lower() in SECRET_PARAMETERS for k, _ in query)
    host = given.get("host", host)
    port_text = given.get("port", "" if port is None else str(port))
    moved = {"user", "host", "port", "dbname"}
    if host.startswith(("/", "@")) or "," in host + port_text:  # a socket's folder, several hosts:
        host, port_text = "", ""  # (they stay in the query, where a URL can hold them)
        moved -= {"host", "port"}
    if ":" in host and not host.startswith("["):
        host = f"[{quote(host, safe=':')}]"  # an IPv6 address (its zone's `%` encoded)
    # each part encoded again, so that what is recorded reads back as the same connection
    userinfo = (quote(user, safe="") + (f":{MASK}" if has_password else "") + "@") if user or has_password else ""
    netloc = userinfo + host + (f":{quote(port_text, safe='')}" if port_text else "")
    shown = [f"{quote(k, safe=_QUERY_SAFE)}={MASK if k.lower() in SECRET_PARAMETERS else quote(v, safe=_QUERY_SAFE)}"
             for k, v in query if k not in moved]
    masked = f"postgresql://{netloc}/{quote(database, safe='')}" + ("?" + "&".join(shown) if shown else "")
    return mask_urls(masked), database


def parse_location(text: str | Path) -> StoreLocation:
    """STORE as given on the command line or in the run history: a PostgreSQL URL, else a path."""
    if isinstance(text, Path):
        return text
    if is_postgres_url(text):
        masked, database = _masked_url(text)
        # a recorded URL: the password comes from libpq's environment (a `password=***` was sent as the password)
        url = _MASKED_PASSWORD.sub(r"\1@", text)
        if _MASKED_PARAMETER.search(url):
            url = re.sub(r"[?&](?=#|$)", "", _MASKED_PARAMETER.sub("", url))
        return PostgresLocation(url=url, masked=masked, database=database)
    return Path(text)


def display_location(location: StoreLocation | str) -> str:
    """How a store is shown and recorded: a path as given, a URL masked."""
    if isinstance(location, PostgresLocation):
        return location.masked
    if isinstance(location, str) and is_postgres_url(location):
        return _masked_url(location)[0]
    return str(location)


def store_identity(location: StoreLocation) -> str:
    """What the run history records as a run's store: a file's absolute path, a URL masked
    (a re-run connects with libpq's environment or ~/.pgpass for the password)."""
    if isinstance(location, PostgresLocation):
        return location.masked
    return os.path.abspath(location)


def store_files(location: StoreLocation) -> list[Path]:
    """The files a store is (an SQLite file with its journal companions; none for a URL):
    what an output file must never be."""
    if isinstance(location, PostgresLocation):
        return []
    return sqlite_files(location)
