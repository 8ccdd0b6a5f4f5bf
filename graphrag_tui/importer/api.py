"""``graphrag-tui import-graphrag``: a Microsoft GraphRAG output folder into a community store."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Literal

from graphrag_tui.errors import InputError
from graphrag_tui.importer.mapping import build_rows
from graphrag_tui.importer.parquet_tables import read_index
from graphrag_tui.importer.report import ImportReport
from graphrag_tui.importer.writer import (
    ImportInterrupted,
    check_writable,
    write_namespace,
    write_namespace_postgres,
)
from graphrag_tui.safe_text import clean
from graphrag_tui.store.location import PostgresLocation
from graphrag_tui.store.pg_adapt import Adaptations

TEXT_COLUMNS = ("summary", "full_content")


def import_graphrag(
    source_dir: Path,
    store_path: Path | PostgresLocation,
    namespace: str,
    text: Literal["summary", "full_content"] = "summary",
    *,
    interrupted: Callable[[], bool] = lambda: False,
    strict: bool = False,
) -> ImportReport:
    """Import a GraphRAG 1.x/2.x/3.x index into ``namespace`` of the store, replacing it.

    Everything is read and checked before the store is touched, and the store is written in one
    transaction: a failure raises InputError (one line) and leaves the store as it was.
    `interrupted` is polled between the steps and while writing: once it returns True before
    the commit, the import stops with ImportInterrupted and the store is left as it was. Once
    the commit has begun, the import completes.

    A PostgreSQL store (`PostgresLocation`) gets graphrag-ts's tables when it has none, and
    rows adapted to their constraints, each change reported (`report.adaptations`);
    `strict` refuses any such change instead (InputError, nothing written).
    """
    if text not in TEXT_COLUMNS:
        raise InputError(f"--text must be summary or full_content, not {text!r}")
    if not isinstance(namespace, str) or namespace.strip() == "":
        raise InputError("--namespace must not be empty")
    if namespace != namespace.strip() or "/" in namespace:
        raise InputError(
            f"invalid namespace {namespace!r}: no '/' and no leading or trailing spaces "
            "('/' separates the namespace from the GraphRAG number in IDs)"
        )
    if clean(namespace) != namespace or "\t" in namespace or "\n" in namespace:
        raise InputError(
            f"invalid namespace {namespace!r}: no control characters, bidirectional controls "
            "or bytes that are not UTF-8"
        )
    source_dir = Path(source_dir)
    if not isinstance(store_path, PostgresLocation):
        store_path = Path(store_path)
        check_writable(store_path)  # before the (long) read; checked again when writing
    index = read_index(source_dir, text)
    if interrupted():
        raise ImportInterrupted
    report = ImportReport(
        source_dir=source_dir,
        store_path=store_path,
        namespace=namespace,
        layout=index.layout,
        text_column=text,
    )
    rows = build_rows(index, namespace, text, report)
    if interrupted():
        raise ImportInterrupted
    if isinstance(store_path, PostgresLocation):
        report.adaptations = Adaptations(strict=strict)
        report.replaced_rows, report.new_store = write_namespace_postgres(
            store_path, namespace, rows, report.adaptations, interrupted)
    else:
        report.replaced_rows, report.new_store = write_namespace(store_path, namespace, rows, interrupted)
    return report
