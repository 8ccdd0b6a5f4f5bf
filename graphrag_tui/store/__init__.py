"""The SQLite community store (SPEC §2)."""

from graphrag_tui.store.store import (
    ChunkDetail,
    ClaimDetail,
    CommunityDetail,
    CommunityStore,
    NamespaceInfo,
)
from graphrag_tui.store.validation import StoreError

__all__ = ["ChunkDetail", "ClaimDetail", "CommunityDetail", "CommunityStore", "NamespaceInfo", "StoreError"]
