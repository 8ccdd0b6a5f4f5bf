"""The SQLite community store (SPEC §2)."""

from graphrag_tui.store.store import (
    ChunkDetail,
    ClaimDetail,
    CommunityDetail,
    CommunityStore,
    NamespaceInfo,
)

__all__ = ["ChunkDetail", "ClaimDetail", "CommunityDetail", "CommunityStore", "NamespaceInfo"]
