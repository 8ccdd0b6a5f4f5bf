"""The bundled sample store: rebuilt from source it equals the committed file, and it has
the shape the app and the docs rely on."""

from __future__ import annotations

import hashlib
import math
import re
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from graphrag_tui.store import CommunityStore
from graphrag_tui.store.schema import TABLES

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_db" / "sample.db"
BUILD = ROOT / "sample_db" / "build.py"
MAP_PROMPT_BUDGET = 8000 - 512


def estimate(text: str) -> int:
    non_ascii = sum(1 for ch in text if ord(ch) >= 128)
    return math.ceil(non_ascii / 1.8 + (len(text) - non_ascii) / 4)


def rows(path: Path, table: str) -> list[tuple]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return conn.execute(f"SELECT * FROM {table} ORDER BY id").fetchall()
    finally:
        conn.close()


@pytest.fixture(scope="module")
def sample() -> CommunityStore:
    with CommunityStore.open(SAMPLE) as store:
        yield store


def test_rebuild_equals_committed_store(tmp_path):
    fresh = tmp_path / "sample.db"
    subprocess.run([sys.executable, str(BUILD), str(fresh)], check=True, cwd=tmp_path,
                   capture_output=True)
    for table in TABLES:
        built, committed = rows(fresh, table), rows(SAMPLE, table)
        assert len(built) == len(committed), table
        assert built == committed, table
    # A second build over the same file gives the same rows again.
    subprocess.run([sys.executable, str(BUILD), str(fresh)], check=True, capture_output=True)
    assert rows(fresh, "rag_claims") == rows(SAMPLE, "rag_claims")


def test_committed_file_is_small_plain_and_unchanged_by_reading(sample):
    data = SAMPLE.read_bytes()
    assert len(data) < 2 * 1024 * 1024
    assert data[18:20] == b"\x01\x01"  # rollback journal, not WAL
    for suffix in ("-wal", "-shm", "-journal"):
        assert not SAMPLE.with_name(SAMPLE.name + suffix).exists()
    before = hashlib.sha256(data).hexdigest()
    for ns in sample.namespaces():
        sample.select_communities(ns.name, None)
    assert hashlib.sha256(SAMPLE.read_bytes()).hexdigest() == before


def test_two_namespaces_one_english_one_chinese(sample):
    names = [ns.name for ns in sample.namespaces()]
    assert names == ["harbor-city", "tea-history-zh"]
    han = re.compile(r"[\u4e00-\u9fff]")
    for name, chinese in (("harbor-city", False), ("tea-history-zh", True)):
        text = "".join(c.summary for c in sample.select_communities(name, None))
        share = len(han.findall(text)) / len(text)
        assert (share > 0.5) if chinese else (share == 0), name


def test_hierarchy_has_levels_and_leaves_at_different_depths(sample):
    for ns in sample.namespaces():
        assert list(ns.levels) == [0, 1, 2, 3], ns.name
        leaf_levels = Counter(
            sample.community(c.id).level for c in sample.select_communities(ns.name, None))
        assert len(leaf_levels) >= 3, ns.name
        assert leaf_levels[1] >= 1 and leaf_levels[3] >= 1, ns.name
        # Some level-1 community has level-2 and level-3 descendants.
        deep = [c.id for c in sample.select_communities(ns.name, 1)
                if {sample.community(leaf).level
                    for leaf in sample.community(c.id).leaf_ids} >= {2, 3}]
        assert deep, ns.name


def test_ids_are_namespace_slash_number_with_numbers_past_nine(sample):
    for ns in sample.namespaces():
        ids = [c.id for level in ns.levels for c in sample.select_communities(ns.name, level)]
        assert len(ids) == ns.community_count
        numbers = [int(re.fullmatch(rf"{re.escape(ns.name)}/(\d+)", i).group(1)) for i in ids]
        assert max(numbers) >= 10 and min(numbers) < 10
        assert sample.resolve_community(ns.name, "10") == f"{ns.name}/10"


def test_claims_objects_and_shared_chunks(sample):
    claims = [
        claim
        for ns in sample.namespaces()
        for community in sample.select_communities(ns.name, None)
        for claim in community.claims
    ]
    assert len(claims) >= 200
    assert sum(c.object is None for c in claims) >= 20
    assert sum(c.object is not None for c in claims) >= 20
    assert all(c.chunk_id for c in claims)
    per_chunk = Counter(c.chunk_id for c in claims)
    assert max(per_chunk.values()) >= 2
    total = sum(ns.claim_count for ns in sample.namespaces())
    assert total == len(claims)  # every claim sits on a leaf with a summary


def test_one_summary_must_be_split_at_the_default_map_budget(sample):
    estimates = {
        c.id: estimate(c.summary)
        for ns in sample.namespaces()
        for c in sample.select_communities(ns.name, None)
    }
    long_ones = [cid for cid, tokens in estimates.items() if tokens > MAP_PROMPT_BUDGET]
    assert long_ones == ["harbor-city/4"]
    assert len(sample.community("harbor-city/4").summary) > 40_000


def test_demo_questions_have_matching_words(sample):
    text = " ".join(
        " ".join([c.summary] + [cl.description for cl in c.claims]
                 + [e.content for e in c.excerpts])
        for c in sample.select_communities("harbor-city", None)
    ).lower()
    for word in ("1998", "flood", "damage", "caused", "funds", "bridge"):
        assert word in text
    for word in ("bitcoin", "price"):
        assert word not in text
