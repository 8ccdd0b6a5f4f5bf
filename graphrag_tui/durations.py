"""How long something takes, as people read it (the app, the CLI's notes)."""

from __future__ import annotations


def duration_text(seconds: float | None) -> str:
    """`0.4 s`, `12 s`, `3 min 04 s`, `1 h 02 min`; `—` for a run that has not finished."""
    if seconds is None or seconds < 0:
        return "—"
    if seconds < 10:
        return f"{seconds:.1f} s"
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60:02d} s"
    return f"{whole // 3600} h {whole % 3600 // 60:02d} min"
