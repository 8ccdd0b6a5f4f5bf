"""What an import did, and its printed form."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from graphrag_tui.safe_text import path_text
from graphrag_tui.store.location import PostgresLocation, display_location
from graphrag_tui.store.pg_adapt import Adaptations


@dataclass
class ImportReport:
    source_dir: Path
    store_path: Path | PostgresLocation  # shown masked (display_location)
    namespace: str
    layout: str  # GraphRAG version family: "1.x", "2.x" or "3.x"
    text_column: str  # "summary" or "full_content"
    communities_per_level: dict[int, int] = field(default_factory=dict)
    leaves: int = 0
    entities: int = 0
    entities_from_claims: int = 0  # entities created for claim subjects/objects not in entities
    claims_assigned: int = 0
    claims_assigned_by_text_unit: int = 0  # of claims_assigned: no leaf held the subject
    claims_unassigned: int = 0
    chunks: int = 0
    documents: int = 0
    #: what kind of reference -> how many were skipped
    dangling: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    #: rows of the namespace that the import replaced (0 for a new namespace)
    replaced_rows: int = 0
    new_store: bool = False  # a new SQLite file, or graphrag-ts's tables created in the database
    #: what fitting the rows to graphrag-ts's tables changed (PostgreSQL stores only)
    adaptations: Adaptations | None = None

    @property
    def communities(self) -> int:
        return sum(self.communities_per_level.values())

    @property
    def claims(self) -> int:
        return self.claims_assigned + self.claims_unassigned

    def skip(self, what: str, count: int = 1) -> None:
        self.dangling[what] = self.dangling.get(what, 0) + count


def format_report(report: ImportReport) -> str:
    """The multi-line summary the CLI prints on stdout after an import."""
    lines = [
        f"Imported GraphRAG {report.layout} index {path_text(report.source_dir)}",
        f"  into {'new store' if report.new_store else 'store'} {path_text(display_location(report.store_path))}, "
        f"namespace '{path_text(report.namespace)}' (community text: {report.text_column})",
    ]
    if report.replaced_rows:
        lines.append(f"  replaced the namespace's previous {report.replaced_rows} rows")
    levels = ", ".join(
        f"level {level}: {count}" for level, count in sorted(report.communities_per_level.items())
    )
    lines.append(f"Communities: {report.communities}" + (f" ({levels})" if levels else ""))
    lines.append(f"Leaves: {report.leaves}")
    entities = f"Entities: {report.entities}"
    if report.entities_from_claims:
        entities += f" (incl. {report.entities_from_claims} named only by claims)"
    lines.append(entities)
    by_unit = report.claims_assigned_by_text_unit
    lines.append(
        f"Claims: {report.claims} (assigned to a leaf: {report.claims_assigned} "
        f"[{report.claims_assigned - by_unit} by subject entity, {by_unit} by text unit], "
        f"unassigned: {report.claims_unassigned})"
    )
    lines.append(f"Chunks: {report.chunks}")
    lines.append(f"Documents: {report.documents}")
    if report.dangling:
        lines.append(f"Skipped dangling references: {sum(report.dangling.values())}")
        lines.extend(f"  {count} {what}" for what, count in report.dangling.items())
    else:
        lines.append("Skipped dangling references: none")
    if report.notes:
        lines.append("Notes:")
        lines.extend(f"  - {note}" for note in report.notes)
    if report.adaptations is not None:
        lines.extend(report.adaptations.lines())
    return "\n".join(lines)
