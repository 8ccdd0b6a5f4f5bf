"""The SQLite community store (SPEC §2)."""

from graphrag_tui.store.records import ChunkDetail, ClaimDetail, ClaimProvenance, CommunityRef, GoToMatch
from graphrag_tui.store.store import CommunityDetail, CommunityStore, NamespaceInfo
from graphrag_tui.store.validation import StoreError

__all__ = [
    "ChunkDetail",
    "ClaimDetail",
    "ClaimProvenance",
    "CommunityDetail",
    "CommunityRef",
    "CommunityStore",
    "GoToMatch",
    "NamespaceInfo",
    "StoreError",
]
