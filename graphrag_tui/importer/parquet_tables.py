"""Reading a Microsoft GraphRAG output folder: file layouts, column aliases, value coercion.

pyarrow is an optional extra (``graphrag-tui[graphrag]``) and is imported only when an import
runs. Every problem with the input becomes an :class:`InputError` of one line that names the
file and, where it applies, the column.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graphrag_tui.errors import InputError

PYARROW_MISSING = "pyarrow is not installed: pip install 'graphrag-tui[graphrag]'"

#: The tables the importer reads, in reading order. ``covariates`` (claims) is optional.
TABLE_NAMES = ("communities", "community_reports", "entities", "documents", "text_units", "covariates")
REQUIRED_TABLES = frozenset(TABLE_NAMES) - {"covariates"}

#: GraphRAG 1.x writes ``create_final_<table>.parquet``; 2.x and 3.x write ``<table>.parquet``.
LEGACY_PREFIX = "create_final_"


@dataclass(frozen=True)
class Column:
    """One column the importer reads: its canonical name and the names older/newer versions use."""

    name: str
    aliases: tuple[str, ...] = ()
    required: bool = True
    #: Whether its cells may be lists (else each is text or a number: a struct written as
    #: text was stored as its Python repr).
    lists: bool = False

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)


#: The columns read from each table. Everything else in a table is ignored.
COLUMNS: dict[str, tuple[Column, ...]] = {
    "communities": (
        Column("community"),
        Column("level"),
        Column("parent"),
        Column("entity_ids", lists=True),
        Column("children", required=False, lists=True),  # absent before 2.x: derived from `parent`
        Column("text_unit_ids", required=False, lists=True),
    ),
    "community_reports": (
        Column("community"),
        Column("title", required=False),
        Column("summary", required=False),  # the chosen text column is made required at read time
        Column("full_content", required=False),
        Column("level", required=False),
        Column("parent", required=False),
        # Kept in optional store columns (issue 15); `rank_explanation` is 1.x's name.
        Column("rank", required=False),
        Column("rating_explanation", aliases=("rank_explanation",), required=False),
        Column("findings", required=False, lists=True),
    ),
    "entities": (
        Column("id"),
        Column("human_readable_id", required=False),
        Column("title", aliases=("name",)),
        Column("description", required=False),
    ),
    "documents": (
        Column("id"),
        Column("human_readable_id", required=False),
        Column("title", required=False),
        Column("text", required=False),
        # `raw_data` (3.x) / `metadata` (2.x) / `attributes` (1.x) is not read: no store column.
    ),
    "text_units": (
        Column("id"),
        Column("human_readable_id", required=False),
        Column("text", aliases=("chunk",)),
        # 3.x: one document id per unit; up to 2.x: a list of them.
        Column("document_id", aliases=("document_ids",), lists=True),
    ),
    "covariates": (
        Column("id"),
        Column("human_readable_id", required=False),
        Column("subject_id"),
        Column("object_id", required=False),
        Column("description", required=False),
        Column("text_unit_id"),
        # What GraphRAG says of a claim beyond SPEC §2, kept in optional store columns.
        Column("source_text", required=False),
        Column("type", required=False),
        Column("status", required=False),
        Column("start_date", required=False),
        Column("end_date", required=False),
    ),
}


@dataclass
class Table:
    """The rows of one Parquet file, keyed by canonical column names."""

    name: str
    path: Path
    rows: list[dict[str, Any]]
    #: canonical column name -> the name the file actually uses (only columns that are present)
    source_columns: dict[str, str] = field(default_factory=dict)

    def has(self, column: str) -> bool:
        return column in self.source_columns

    def column_label(self, column: str) -> str:
        return self.source_columns.get(column, column)


@dataclass
class GraphRagIndex:
    directory: Path
    layout: str  # "1.x", "2.x" or "3.x"
    naming: str  # "legacy" (create_final_*.parquet) or "plain"
    tables: dict[str, Table]

    def file_name(self, name: str) -> str:
        return table_file_name(name, self.naming)

    def table(self, name: str) -> Table | None:
        return self.tables.get(name)


def _import_pyarrow() -> Any:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError(PYARROW_MISSING) from None
    return pq


def one_line(text: object) -> str:
    """Collapse an exception text into one line."""
    flat = " ".join(str(text).split())
    return flat or "unknown error"


def _find_layout_dir(source_dir: Path) -> tuple[Path, str] | None:
    """The folder holding the tables and its file naming ("plain" or "legacy"), if any."""
    candidates = [source_dir, source_dir / "artifacts"]  # 1.x runs could nest tables in artifacts/
    for folder in candidates:
        if (folder / "community_reports.parquet").is_file() or (folder / "communities.parquet").is_file():
            return folder, "plain"
        if (folder / f"{LEGACY_PREFIX}community_reports.parquet").is_file() or (
            folder / f"{LEGACY_PREFIX}communities.parquet"
        ).is_file():
            return folder, "legacy"
    return None


def table_file_name(name: str, naming: str) -> str:
    return f"{LEGACY_PREFIX}{name}.parquet" if naming == "legacy" else f"{name}.parquet"


def read_index(source_dir: Path, text_column: str) -> GraphRagIndex:
    """Find and read every table the importer needs; raise InputError on any problem."""
    pq = _import_pyarrow()
    source_dir = Path(source_dir)
    if not source_dir.exists():
        raise InputError(f"GraphRAG output folder not found: {source_dir}")
    if not source_dir.is_dir():
        raise InputError(f"not a folder: {source_dir} (give the GraphRAG output folder)")
    found = _find_layout_dir(source_dir)
    if found is None:
        raise InputError(
            f"no GraphRAG tables in {source_dir}: expected community_reports.parquet "
            f"(GraphRAG 2.x/3.x) or {LEGACY_PREFIX}community_reports.parquet (GraphRAG 1.x)"
        )
    folder, naming = found

    paths: dict[str, Path] = {}
    for name in TABLE_NAMES:
        path = folder / table_file_name(name, naming)
        if path.is_symlink() and not path.exists():  # (an optional table's was read as none: no claims)
            raise InputError(f"GraphRAG table {path} is a symbolic link to nothing")
        if path.exists() and not path.is_file():  # a FIFO, a device, a partitioned dataset's folder
            raise InputError(f"GraphRAG table {path} is not a regular file (one Parquet file per table is read)")
        if not path.is_file():
            if name in REQUIRED_TABLES:
                raise InputError(f"missing GraphRAG table {path.name} in {folder}")
            continue
        paths[name] = path
    opened = {name: _open_table(pq, name, path, (text_column,) if name == "community_reports" else ())
              for name, path in paths.items()}
    # The tables' memory together, as each one's, before any is read: six tables each just
    # under the floor took 1.2 GB and more.
    if sum(t.estimate for t in opened.values()) > max(MEMORY_FLOOR, MAX_EXPANSION * sum(p.stat().st_size
                                                                                    for p in paths.values())):
        raise InputError(f"{folder}: its tables would take over {MAX_EXPANSION} times their size once read (over "
                         f"{MEMORY_FLOOR >> 20} MiB for a small index): refused (GraphRAG's own take 2 to 6 times theirs)")
    tables = {name: _read_table(table) for name, table in opened.items()}

    if naming == "legacy":
        layout = "1.x"
    elif tables["text_units"].column_label("document_id") == "document_id":
        layout = "3.x"
    else:
        layout = "2.x"
    return GraphRagIndex(directory=folder, layout=layout, naming=naming, tables=tables)


@dataclass(frozen=True)
class _OpenTable:
    """A table's file, opened and checked, not yet read: the columns it is read by, and what
    they would take in memory."""

    name: str
    path: Path
    parquet: Any
    source_columns: dict[str, str]
    estimate: int
    #: What it may take once read (MAX_EXPANSION times its file, MEMORY_FLOOR at least).
    limit: int


def _open_table(pq: Any, name: str, path: Path, extra_required: tuple[str, ...]) -> _OpenTable:
    try:
        parquet = pq.ParquetFile(path)
        names = parquet.schema_arrow.names
    except Exception as exc:  # pyarrow raises ArrowInvalid, OSError, ...
        raise InputError(f"cannot read {path}: {one_line(exc)}") from None
    present = set(names)

    if name == "communities" and "parent" not in present:
        raise InputError(
            f"{path} has no 'parent' column: this index was built by a GraphRAG older than 1.0, "
            "which has no community hierarchy to import; re-index it with GraphRAG 1.0 or later"
        )

    source_columns: dict[str, str] = {}
    for column in COLUMNS[name]:
        actual = next((n for n in column.names if n in present), None)
        if actual is None:
            if column.required or column.name in extra_required:
                alternatives = " or ".join(repr(n) for n in column.names)
                raise InputError(f"{path} has no column {alternatives}")
            continue
        if names.count(actual) > 1:  # (its rows read the last one)
            raise InputError(f"{path} has {names.count(actual)} columns named {actual!r}: which to read is not known")
        kind = parquet.schema_arrow.field(actual).type
        if not column.lists and _nested(kind):
            raise InputError(f"{path}: column {actual!r} holds {one_line(kind)}, not text or a number")
        source_columns[column.name] = actual

    columns = sorted(set(source_columns.values()))
    limit = max(MEMORY_FLOOR, MAX_EXPANSION * path.stat().st_size)
    try:
        estimate = _check_expansion(path, parquet.metadata, columns, limit)
        encoded = _dictionary_encoded(parquet.metadata, columns)
        if encoded:  # read as Arrow dictionaries: what they decode to is counted before it is
            parquet = pq.ParquetFile(path, read_dictionary=encoded)
    except InputError:
        raise
    except Exception as exc:
        raise InputError(f"cannot read {path}: {one_line(exc)}") from None
    return _OpenTable(name, path, parquet, source_columns, estimate, limit)


def _nested(kind: Any) -> bool:
    """Whether an Arrow type holds values of other types (a struct, a list, a map)."""
    import pyarrow as pa

    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    return bool(pa.types.is_nested(kind))


def _read_table(table: _OpenTable) -> Table:
    try:
        arrow = table.parquet.read(columns=sorted(set(table.source_columns.values())))
        size = sum(_decoded_size(chunk) for column in arrow.columns for chunk in column.chunks)
    except Exception as exc:
        raise InputError(f"cannot read {table.path}: {one_line(exc)}") from None
    if size > table.limit:
        raise _bomb(table.path, size)
    try:
        raw_rows = arrow.to_pylist()
    except Exception as exc:
        raise InputError(f"cannot read {table.path}: {one_line(exc)}") from None
    rows = [{canon: raw[actual] for canon, actual in table.source_columns.items()} for raw in raw_rows]
    return Table(name=table.name, path=table.path, rows=rows, source_columns=table.source_columns)


def _dictionary_encoded(metadata: Any, columns: list[str]) -> list[str]:
    """The columns read (their leaves' paths) with a chunk stored as a dictionary and indexes
    into it: the footer's sizes count each value once, however many rows repeat it."""
    return sorted({chunk.path_in_schema for chunk in _chunks_read(metadata, columns)
                   if {"PLAIN_DICTIONARY", "RLE_DICTIONARY"} & set(chunk.encodings)})


def _chunks_read(metadata: Any, columns: list[str]) -> list[Any]:
    """The footer's column chunks of `columns` (a list's chunk is its leaf's, `ids.list.element`)."""
    return [chunk for group in map(metadata.row_group, range(metadata.num_row_groups))
            for chunk in map(group.column, range(group.num_columns)) if chunk.path_in_schema.split(".")[0] in columns]


def _decoded_size(array: Any) -> int:
    """What an Arrow array's cells take once they are Python objects: each element of a list
    a cell, a dictionary's value counted in every row that names it (a 45 KB file of 3,000
    rows of one 100 KB text decodes to 300 MB)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = array.type
    cells = len(array) * CELL_BYTES
    if pa.types.is_dictionary(kind):
        values = array.dictionary
        if pa.types.is_string(values.type) or pa.types.is_binary(values.type) \
                or pa.types.is_large_string(values.type) or pa.types.is_large_binary(values.type):
            return cells + int(pc.sum(pc.take(pc.binary_length(values), array.indices)).as_py() or 0)
        return cells + _decoded_size(array.dictionary_decode())
    if pa.types.is_struct(kind):
        return cells + sum(map(_decoded_size, array.flatten()))
    if pa.types.is_map(kind):  # (Arrow cannot flatten a map: a pyarrow error refused the file)
        return cells + _decoded_size(array.keys) + _decoded_size(array.items)
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        return cells + _decoded_size(array.flatten())
    return cells + array.nbytes


#: What a table may take in memory once read, against its file's size: real GraphRAG output
#: takes 1.5-6 times (its columns unpacked, and a Python object per cell); a 30 KB file of five
#: million repeated rows, or 10 KB unpacking to one 300 MB cell, took over 2 GB.
MAX_EXPANSION = 100
#: Below this, any expansion is read.
MEMORY_FLOOR = 256 << 20
#: About what a cell costs as a Python object, besides its bytes.
CELL_BYTES = 64


def _check_expansion(path: Path, metadata: Any, columns: list[str], limit: int) -> int:
    """The size the footer gives the columns read, unpacked, and their cells as objects,
    before anything is read; InputError past `limit`."""
    chunks = _chunks_read(metadata, columns)
    unpacked = sum(chunk.total_uncompressed_size for chunk in chunks)
    cells = sum(chunk.num_values for chunk in chunks)  # (a list's elements are values: a row may hold millions)
    estimate = unpacked + max(cells, metadata.num_rows * len(columns)) * CELL_BYTES
    if estimate > limit:
        raise _bomb(path, estimate)
    return estimate


def _bomb(path: Path, size: int) -> InputError:
    return InputError(
        f"{path}: its {path.stat().st_size:,} bytes would take some {size >> 20:,} MiB once read, over "
        f"{MAX_EXPANSION} times their size: refused (GraphRAG's own tables take 2 to 6 times theirs)"
    )


# ---------------------------------------------------------------------------------------------
# Value coercion. GraphRAG versions differ in types: community numbers may be strings, pandas may
# have turned integer columns with nulls into floats, and lists may arrive JSON-encoded.
# ---------------------------------------------------------------------------------------------


def _bad_value(table: Table, column: str, row_index: int, value: object, expected: str) -> InputError:
    shown = repr(value)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return InputError(
        f"{table.path}: column '{table.column_label(column)}' row {row_index} "
        f"is not {expected}: {shown}"
    )


def as_int(table: Table, column: str, row_index: int, value: object, *, allow_null: bool = False) -> int | None:
    """An integer from an int, an integral float or a numeric string."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        if allow_null:
            return None
        raise _bad_value(table, column, row_index, value, "a number")
    if isinstance(value, bool):
        raise _bad_value(table, column, row_index, value, "a number")
    if allow_null and isinstance(value, (str, bytes)) and not value.strip():
        return None
    number = _integer(table, column, row_index, value)
    if not -(2**63) <= number < 2**63:  # what SQLite and PostgreSQL's bigint hold
        raise _bad_value(table, column, row_index, value, "a whole number between -2^63 and 2^63")
    return number


def _integer(table: Table, column: str, row_index: int, value: object) -> int:
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if value.is_integer():
            return int(value)
        raise _bad_value(table, column, row_index, value, "a whole number")
    if isinstance(value, (str, bytes)):
        text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
        text = text.strip()
        if not text.isascii():  # (Python reads "١" as 1, "²" not at all)
            raise _bad_value(table, column, row_index, value, "a number in ASCII digits")
        try:
            return int(text)
        except ValueError:
            try:
                number = float(text)
            except ValueError:
                raise _bad_value(table, column, row_index, value, "a number") from None
            if number.is_integer():
                return int(number)
            raise _bad_value(table, column, row_index, value, "a whole number") from None
    raise _bad_value(table, column, row_index, value, "a number")


def as_list(table: Table, column: str, row_index: int, value: object) -> list[Any]:
    """A list from a list value, a JSON-encoded list or null (empty)."""
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return list(value)
    if isinstance(value, str):
        text = value.strip()
        if text == "":
            return []
        try:
            decoded = json.loads(text)
        except (ValueError, RecursionError):  # RecursionError: JSON nested too deep
            decoded = None
        if isinstance(decoded, list):
            return decoded
    raise _bad_value(table, column, row_index, value, "a list")


def as_text(value: object) -> str | None:
    """A string, or None for null; numbers are written out (``7`` -> ``"7"``)."""
    if value is None:
        return None
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if value.is_integer():
            return str(int(value))
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)
