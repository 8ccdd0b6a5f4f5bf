"""The headless core both faces run through: the CLI and the app resolve their settings
(`options`), open and close the answering model (`model`) and run a search (`run`) here,
and only show what comes back."""

from .model import ModelSession, ModelState, ModelStatus
from .options import (
    HistoryChoice,
    Resolved,
    ResolvedOptions,
    Setting,
    SettingsResolver,
    resolve_retrieval,
)
from .run import RunSession, SearchRequest

__all__ = [
    "HistoryChoice",
    "ModelSession",
    "ModelState",
    "ModelStatus",
    "Resolved",
    "ResolvedOptions",
    "RunSession",
    "SearchRequest",
    "Setting",
    "SettingsResolver",
    "resolve_retrieval",
]
