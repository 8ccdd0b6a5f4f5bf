"""A large, deterministic synthetic community store for benchmarks.

`build_synthetic_store(path, 100_000)` writes 100k communities and 1M claims in one
transaction (a few seconds). The shape: three levels (2% roots at level 0, 10% at level 1,
the rest at level 2), so most communities are leaves and some level-0/level-1 rows are
leaves too; `communities * claims_per_community` claims spread round-robin over the leaves;
one chunk per three claims; half of the claims have an object entity.

`build_tree_store(path, 1_000, 10, 9)` writes the same kind of rows in a regular tree:
1,000 roots (level 0) x 10 branches (level 1) x 9 leaves (level 2) = 101,000 communities,
10 claims per leaf (900,000), so a root carries 900 claims and a branch 90.
"""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path

from graphrag_tui.store.schema import create_schema

NAMESPACE = "synthetic"

_WORDS = (
    "harbor grain ledger tariff convoy storm levee council union freight pier ferry "
    "warehouse festival bridge toll pilot crane dredge tide customs insurance market"
).split()


def _sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words)).capitalize() + "."


def _pool(rng: random.Random, words: int, size: int = 2048) -> list[str]:
    """Sentences to draw from: building a million texts word by word would dominate."""
    return [_sentence(rng, words) for _ in range(size)]


def build_synthetic_store(
    path: str | Path,
    communities: int,
    claims_per_community: int = 10,
    seed: int = 0,
) -> Path:
    """Write a fresh store at `path` (replacing any file there) and return the path."""
    path = Path(path)
    path.unlink(missing_ok=True)
    rng = random.Random(seed)
    short, medium, long = _pool(rng, 10), _pool(rng, 12), _pool(rng, 40)
    ns = NAMESPACE
    roots = max(1, communities // 50)
    middles = max(0, min(communities - roots, communities // 10))

    def cid(i: int) -> str:
        return f"{ns}/{i}"

    summaries = []
    children_of: dict[int, int] = {}
    for i in range(communities):
        if i < roots:
            level, parent = 0, None
        elif i < roots + middles:
            level, parent = 1, rng.randrange(roots)
        elif middles:
            level, parent = 2, roots + rng.randrange(middles)
        else:
            level, parent = 1, rng.randrange(roots)
        if parent is not None:
            children_of[parent] = children_of.get(parent, 0) + 1
        summaries.append((
            cid(i), ns, f"Community {i}", " ".join(rng.choice(medium) for _ in range(4)),
            level,
            cid(parent) if parent is not None else None,
            json.dumps([f"E{rng.randrange(1000)}" for _ in range(3)]),
        ))

    leaves = [i for i in range(communities) if i not in children_of]
    _write_store(path, rng, summaries, leaves, communities * claims_per_community, (short, long))
    return path


def build_tree_store(
    path: str | Path,
    roots: int,
    branches: int,
    leaves: int,
    claims_per_leaf: int = 10,
    seed: int = 0,
) -> Path:
    """A store shaped as a regular tree: `roots` at level 0, each with `branches` children at
    level 1, each with `leaves` children at level 2; the rows and claims are made as in
    `build_synthetic_store` (claims round-robin over the leaves, in id-number order)."""
    path = Path(path)
    path.unlink(missing_ok=True)
    rng = random.Random(seed)
    short, medium, long = _pool(rng, 10), _pool(rng, 12), _pool(rng, 40)
    ns = NAMESPACE
    branch_count = roots * branches
    total = roots + branch_count + branch_count * leaves
    summaries = []
    for i in range(total):
        if i < roots:
            level, parent = 0, None
        elif i < roots + branch_count:
            level, parent = 1, (i - roots) // branches
        else:
            level, parent = 2, roots + (i - roots - branch_count) // leaves
        summaries.append((
            f"{ns}/{i}", ns, f"Community {i}", " ".join(rng.choice(medium) for _ in range(4)), level,
            f"{ns}/{parent}" if parent is not None else None,
            json.dumps([f"E{rng.randrange(1000)}" for _ in range(3)]),
        ))
    leaf_numbers = list(range(roots + branch_count, total))
    _write_store(path, rng, summaries, leaf_numbers, len(leaf_numbers) * claims_per_leaf, (short, long))
    return path


def _write_store(
    path: Path, rng: random.Random, summaries: list[tuple], leaves: list[int], total_claims: int,
    pools: tuple[list[str], list[str]],
) -> None:
    """Entities, documents, chunks and claims for these communities, then every row written."""
    ns = NAMESPACE
    short, long = pools
    communities = len(summaries)

    def cid(i: int) -> str:
        return f"{ns}/{i}"

    entity_count = max(10, communities // 2)
    entities = [(f"{ns}/e{i}", ns, f"Entity {i}", None) for i in range(entity_count)]
    documents = [(f"{ns}/d{i}", ns, f"Document {i}", None) for i in range(max(1, communities // 100))]

    chunk_count = max(1, (total_claims + 2) // 3)
    chunks = [
        (f"{ns}/c{i}", ns, documents[i % len(documents)][0], f"Chunk {i}. {rng.choice(long)}")
        for i in range(chunk_count)
    ]
    claims = []
    for i in range(total_claims):
        subject = rng.randrange(entity_count)
        obj = rng.randrange(entity_count) if i % 2 == 0 else None
        chunk = chunks[i // 3]
        claims.append((
            f"{ns}/k{i}", ns, f"{ns}/e{subject}", f"{ns}/e{obj}" if obj is not None else None,
            f"Claim {i}: {rng.choice(short)}", chunk[2], chunk[0], cid(leaves[i % len(leaves)]),
        ))

    conn = sqlite3.connect(path)
    try:
        create_schema(conn)
        conn.execute("PRAGMA synchronous = OFF")
        with conn:
            conn.executemany("INSERT INTO rag_parents VALUES (?, ?, ?, ?)", documents)
            conn.executemany("INSERT INTO rag_children VALUES (?, ?, ?, ?)", chunks)
            conn.executemany("INSERT INTO rag_entities VALUES (?, ?, ?, ?)", entities)
            conn.executemany(
                "INSERT INTO rag_community_summaries VALUES (?, ?, ?, ?, ?, ?, ?)", summaries
            )
            conn.executemany("INSERT INTO rag_claims VALUES (?, ?, ?, ?, ?, ?, ?, ?)", claims)
    finally:
        conn.close()
