"""Importing Microsoft GraphRAG output (Parquet tables) into a community store."""

from graphrag_tui.importer.api import import_graphrag
from graphrag_tui.importer.report import ImportReport, format_report
from graphrag_tui.importer.writer import ImportInterrupted

__all__ = ["ImportInterrupted", "ImportReport", "format_report", "import_graphrag"]
