"""Importing Microsoft GraphRAG output (Parquet tables) into a community store."""

from graphrag_tui.importer.api import import_graphrag
from graphrag_tui.importer.report import ImportReport, format_report

__all__ = ["ImportReport", "format_report", "import_graphrag"]
