"""Search over the shared Christmas Carol import (skipped where ../shared is absent):
"Marley" finds the entity and the communities whose members include it."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from graphrag_tui.importer import import_graphrag
from graphrag_tui.session.explore import ExploreSession
from graphrag_tui.store import CommunityStore
from tests.test_importer import SHARED


@pytest.mark.skipif(not SHARED.is_dir(), reason="shared GraphRAG sample data not present")
def test_marley_finds_the_entity_and_its_communities(tmp_path: Path) -> None:
    store_path = tmp_path / "cc.db"
    import_graphrag(SHARED, store_path, "cc")
    before = hashlib.sha256(store_path.read_bytes()).hexdigest()
    with CommunityStore.open(store_path) as store:
        explore = ExploreSession(store, "cc", tmp_path / "cache")
        assert explore.text_search.build()
        results = explore.text_search.search("Marley", ("entity",))
        marley = [hit for hit in results.results["entity"] if hit.title == "JACOB MARLEY"]
        assert len(marley) == 1
        entity = explore.entity(marley[0].id)
        assert entity is not None and entity.name == "JACOB MARLEY"
        member_of = {c.id for c in entity.communities}
        assert member_of  # the import lists members by entity name
        communities = explore.text_search.search("Marley", ("community",), limit=200).results["community"]
        found = {hit.id for hit in communities}
        # Every community whose members include Marley and whose text names him is found by the search.
        named = {cid for cid in member_of if "marley" in (store.community(cid).summary or "").lower()}
        assert named and named <= found
        assert all(c.level >= 0 for c in entity.communities)
    assert hashlib.sha256(store_path.read_bytes()).hexdigest() == before
