"""The header line: store, namespace, level, which model answers, and the run phase."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from ..safe_text import one_line


class StatusLine(Static):
    def show(self, *, store: str, namespace: str | None, level: str, model: str, phase: str) -> None:
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(" graphrag-tui ", style="bold reverse")
        for label, value in (("store", store), ("namespace", namespace or "—"), ("level", level), ("model", model)):
            text.append(f"  {label} ", style="dim")
            text.append(one_line(value), style="bold")
        text.append(f"  · {phase}", style="italic")
        self.update(text, layout=False)
