"""`copy`: namespaces from one store into another, SQLite or PostgreSQL, in one transaction.

The source is read through the store (`iter_table_rows`: a page, or a server-side cursor's
group, at a time), so memory stays bounded whatever the namespace's size. The destination
is written by its writer: `SqliteWriter` (the store's own schema) or `PgWriter`
(graphrag-ts's tables, rows adapted to their constraints and reported, `pg_adapt`).
A namespace the destination already has is refused unless `replace`; a refusal, like any
failure, leaves the destination as it was (a SQLite file the copy would have created is
removed).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graphrag_tui.errors import InputError
from graphrag_tui.output_paths import input_named
from graphrag_tui.safe_text import one_line
from graphrag_tui.store.location import PostgresLocation, StoreLocation, display_location, store_files
from graphrag_tui.store.namespace_write import SqliteWriter
from graphrag_tui.store.opening import open_store
from graphrag_tui.store.pg_adapt import Adaptations
from graphrag_tui.store.schema import TABLES

#: How each table's rows are named in the report.
ROW_NAMES = {
    "rag_parents": "documents",
    "rag_children": "chunks",
    "rag_entities": "entities",
    "rag_community_summaries": "communities",
    "rag_claims": "claims",
}


@dataclass
class NamespaceCopy:
    name: str
    rows: dict[str, int] = field(default_factory=dict)  # table -> rows written
    replaced_rows: int = 0  # rows of the namespace the destination had before


@dataclass
class CopyReport:
    source: str  # as shown: a path, or the URL masked
    destination: str
    new_store: bool  # a new SQLite file, or graphrag-ts's tables created in the database
    adaptations: Adaptations
    namespaces: list[NamespaceCopy] = field(default_factory=list)

    @property
    def rows(self) -> int:
        return sum(sum(ns.rows.values()) for ns in self.namespaces)

    def lines(self) -> list[str]:
        where = "new store " if self.new_store else ""
        lines = [f"Copied {len(self.namespaces)} namespace(s) from {self.source} into {where}{self.destination}"]
        for ns in self.namespaces:
            counts = ", ".join(f"{ns.rows.get(table, 0)} {ROW_NAMES[table]}" for table in TABLES)
            replaced = f" (replaced its previous {ns.replaced_rows} rows)" if ns.replaced_rows else ""
            lines.append(f"  '{one_line(ns.name)}': {counts}{replaced}")  # (a newline in it forged report lines)
        lines.append(f"Rows written: {self.rows}")
        return lines + self.adaptations.lines()

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "destination": self.destination,
            "new_store": self.new_store,
            "namespaces": [
                {"name": ns.name, "rows": {ROW_NAMES[t]: ns.rows.get(t, 0) for t in TABLES},
                 "replaced_rows": ns.replaced_rows}
                for ns in self.namespaces
            ],
            "rows": self.rows,
            "adaptations": self.adaptations.to_json(),
        }


def _check_apart(source: StoreLocation, destination: StoreLocation) -> None:
    """InputError when the destination is the source (the same URL, path, symlink or hard
    link), or writes a file of the source's beside it: SQLite took a source named as the
    destination's journal or WAL for one, and deleted it."""
    if isinstance(source, PostgresLocation) or isinstance(destination, PostgresLocation):
        same = isinstance(source, PostgresLocation) and isinstance(destination, PostgresLocation) \
            and source.url == destination.url
    else:
        same = input_named(destination, [source]) is not None
    if same:
        raise InputError(f"copy: the source and the destination are the same store: {display_location(source)}")
    sources = store_files(source)
    shared = next(filter(None, (input_named(file, sources) for file in store_files(destination))), None)
    if shared is not None:
        raise InputError(f"copy: the source and the destination would share the file {shared} (a store and its "
                         "journal or WAL): choose another destination")


def copy_store(
    source: StoreLocation,
    destination: StoreLocation,
    *,
    namespace: str | None = None,
    replace: bool = False,
    strict: bool = False,
    interrupted: Callable[[], bool] = lambda: False,
) -> CopyReport:
    """Copy `namespace` (default: every namespace) of `source` into `destination` in one
    transaction. Raises InputError (one line, URLs masked) for a refusal or a failure;
    the destination is then unchanged."""
    _check_apart(source, destination)
    adaptations = Adaptations(strict=strict)
    with open_store(source, stop_when=interrupted) as store:  # (a read waiting for a lock gives up on Ctrl+C)
        available = [info.name for info in store.namespaces()]
        if namespace is not None and namespace not in available:
            have = ", ".join(f"'{one_line(name)}'" for name in available) or "none"
            raise InputError(f"copy: namespace '{one_line(namespace)}' is not in {display_location(source)} "
                             f"(it has: {have})")
        chosen = [namespace] if namespace is not None else available
        if not chosen:
            raise InputError(f"copy: {display_location(source)} has no namespace to copy")
        extras = {"rag_claims": tuple(store.claim_extras),
                  "rag_community_summaries": tuple(getattr(store, "summary_extras", ()))}
        with _begin(destination, adaptations, interrupted) as writer:
            existing = sorted(set(chosen) & writer.namespaces())
            if existing and not replace:
                names = ", ".join(f"'{one_line(name)}'" for name in existing)
                raise InputError(f"copy: {display_location(destination)} already has namespace(s) {names}; "
                                 "--replace replaces them; nothing was written")
            writer.add_optional({table: columns for table, columns in extras.items() if columns})
            report = CopyReport(
                source=display_location(source), destination=display_location(destination),
                new_store=writer.new_store, adaptations=adaptations,
            )
            for name in chosen:
                copied = NamespaceCopy(name, replaced_rows=writer.delete_namespace(name))
                for table in TABLES:
                    table_extras = extras.get(table, ())
                    rows = store.iter_table_rows(table, name, table_extras)
                    copied.rows[table] = writer.write_table(table, name, rows, table_extras)
                report.namespaces.append(copied)
            writer.commit()
    return report


def _begin(destination: StoreLocation, adaptations: Adaptations, interrupted: Callable[[], bool]) -> Any:
    if isinstance(destination, PostgresLocation):
        from graphrag_tui.store.pg_write import PgWriter  # psycopg only when a URL is given

        return PgWriter.begin(destination, adaptations, interrupted=interrupted)
    path = Path(destination)
    new_file = check_destination(path)
    return SqliteWriter.begin(path, new_file=new_file, interrupted=interrupted)


def check_destination(path: Path) -> bool:
    """A SQLite destination the copy can write (its folder exists; a file, if any, is a
    SQLite store); returns whether the file is new."""
    if path.is_dir():
        raise InputError(f"copy: the destination is a folder: {path}")
    if not path.parent.is_dir():
        raise InputError(f"copy: the destination's folder does not exist: {path.parent}")
    if path.is_symlink() and not path.exists():  # (SQLite made its target; a failed copy then left it, empty)
        raise InputError(f"copy: the destination is a symbolic link to nothing: {path}")
    if not path.exists():
        return True
    if not path.is_file():  # (opening a FIFO waited for a writer forever)
        raise InputError(f"copy: the destination is not a regular file: {path}")
    try:
        with path.open("rb") as handle:
            header = handle.read(16)
    except OSError as error:
        raise InputError(f"copy: cannot read the destination {path}: {error.strerror or error}") from None
    if header and header != b"SQLite format 3\x00":
        raise InputError(f"copy: the destination is not a SQLite store: {path}")
    return False
