"""`search`, `show` and `tree` from the command line: exact JSON, one-line errors (exit 2),
the search index in the cache (reused, rebuilt when the store changes) and a store that
stays byte-identical."""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
from pathlib import Path

import pytest

from tests.cli_runner import clean_env, run_cli
from tests.explore_stores import guards


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return guards(tmp_path / "carol.db")


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return clean_env(XDG_CACHE_HOME=str(tmp_path / "cache"))


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def index_files(env: dict[str, str]) -> list[Path]:
    return sorted((Path(env["XDG_CACHE_HOME"]) / "graphrag-tui" / "search").glob("*"))


def test_search_json_groups_results_by_kind(store: Path, env: dict[str, str]) -> None:
    run = run_cli("search", str(store), "Harrow", "--json", env=env)
    assert run.code == 0, run.stderr
    assert run.json == {
        "query": "Harrow",
        "namespace": "carol",
        "results": {
            "community": [
                {"id": "carol/1", "kind": "community", "title": "Harrow's visit",
                 "snippet": "Jonas Harrow comes back from sea."},
            ],
            "entity": [
                {"id": "carol/89", "kind": "entity", "title": "JONAS HARROW",
                 "snippet": "JONAS HARROW: Quill's old partner, away seven years"},
            ],
            "claim": [
                {"id": "carol/89", "kind": "claim", "title": "JONAS HARROW -> ELIAS QUILL",
                 "snippet": "Harrow warns Quill of three inspectors"},
            ],
            "chunk": [
                {"id": "carol/k1", "kind": "chunk", "title": "A Harbour Ledger", "snippet": "Harrow was away, to begin with."},
            ],
        },
    }
    assert "building the search index" in run.stderr


def test_search_phrase_prefix_kind_and_limit(store: Path, env: dict[str, str]) -> None:
    phrase = run_cli("search", str(store), '"counting house"', "--json", env=env).json["results"]
    assert [hit["id"] for hits in phrase.values() for hit in hits] == ["carol/2"]
    prefix = run_cli("search", str(store), "Penr*", "--kind", "claim", "--json", env=env).json
    assert list(prefix["results"]) == ["claim"]
    assert [hit["id"] for hit in prefix["results"]["claim"]] in (["carol/c3", "carol/c4"], ["carol/c4", "carol/c3"])
    limited = run_cli("search", str(store), "Quill", "--kind", "claim", "--limit", "1", "--json", env=env).json
    assert len(limited["results"]["claim"]) == 1


@pytest.mark.parametrize(("query", "message"), [
    ("   ", "graphrag-tui: error: The search query is empty\n"),
    ('"unclosed', "graphrag-tui: error: Cannot parse the search query: unterminated string\n"),
    ("AND", 'graphrag-tui: error: Cannot parse the search query: fts5: syntax error near "AND"\n'),
    # each term reads all its places in the index: 800 took minutes and ran out of memory
    (" ".join(["Harrow"] * 33), "graphrag-tui: error: The search query has 33 words: search for at most 32\n"),
])
def test_bad_queries_are_one_line_exit_2(store: Path, env: dict[str, str], query: str, message: str) -> None:
    run = run_cli("search", str(store), query, env=env)
    assert (run.code, run.stdout) == (2, "")
    assert run.stderr.splitlines()[-1] + "\n" == message


def test_a_query_of_32_words_is_searched(store: Path, env: dict[str, str]) -> None:
    run = run_cli("search", str(store), " ".join(["Harrow"] * 32), "--json", env=env)
    assert run.code == 0, run.stderr
    assert run.json["results"] == run_cli("search", str(store), "Harrow", "--json", env=env).json["results"]


def test_limit_must_be_positive(store: Path, env: dict[str, str]) -> None:
    run = run_cli("search", str(store), "Harrow", "--limit", "0", env=env)
    assert (run.code, run.stdout, run.stderr) == (2, "", "graphrag-tui: error: --limit must be a positive integer, got '0'\n")
    huge = "9" * 5000  # more digits than int() converts
    for args, quoted in ((["search", str(store), "Harrow", "--limit", huge], "9" * 39 + "…"),
                         (["tree", str(store), "--depth", huge], "9" * 39 + "…"),
                         (["search", str(store), "Harrow", "--limit", "²"], "²")):
        refused = run_cli(*args, env=env)
        assert (refused.code, refused.stdout) == (2, "")
        assert refused.stderr == f"graphrag-tui: error: {args[-2]} must be a positive integer, got {quoted!r}\n"
    # past what SQLite's integers hold: every match (it was an internal error)
    every = run_cli("search", str(store), "Harrow", "--limit", str(2**63), "--json", env=env)
    assert every.code == 0, every.stderr
    assert every.json["results"] == run_cli("search", str(store), "Harrow", "--limit", "1000", "--json", env=env).json["results"]


def test_the_index_is_reused_then_rebuilt_when_the_store_changes(store: Path, env: dict[str, str]) -> None:
    before = sha256(store)
    assert run_cli("search", str(store), "pie", env=env).code == 0
    (index,) = index_files(env)
    stat = index.stat()
    second = run_cli("search", str(store), "pie", env=env)
    assert second.code == 0 and "building" not in second.stderr
    assert (index.stat().st_mtime_ns, index.stat().st_ino) == (stat.st_mtime_ns, stat.st_ino)  # never rewritten
    assert sha256(store) == before and not list(store.parent.glob("carol.db-*"))  # byte-identical, no side files
    os.utime(store, ns=(stat.st_atime_ns, os.stat(store).st_mtime_ns + 10_000_000_000))
    third = run_cli("search", str(store), "pie", env=env)
    assert third.code == 0 and "building the search index" in third.stderr
    assert index_files(env) == [index] and index.stat().st_ino != stat.st_ino  # replaced in place
    assert sha256(store) == before


def test_a_damaged_or_unwritable_index_is_one_line_or_built_again(store: Path, env: dict[str, str]) -> None:
    """Each was an internal error: a folder where the index goes, an index whose ids are not
    text; one without a table said the query could not be parsed."""
    found = run_cli("search", str(store), "pie", "--json", env=env)
    (index,) = index_files(env)
    with contextlib.closing(sqlite3.connect(index)) as db:
        db.execute("UPDATE ids_community SET id = x'1b5b324a'")
        db.commit()
    damaged = run_cli("search", str(store), "pie", env=env)
    assert (damaged.code, damaged.stdout) == (2, "")
    assert damaged.stderr == (f"graphrag-tui: error: The search index {index} is damaged (an id that is not text): "
                              "delete it, and the next search builds it again\n")
    with contextlib.closing(sqlite3.connect(index)) as db:
        db.execute("UPDATE ids_community SET id = 'carol/1'")
        db.execute("UPDATE fts_claim_config SET v = 5 WHERE k = 'version'")
        db.commit()
    newer = run_cli("search", str(store), "pie", env=env)
    assert (newer.code, newer.stdout) == (2, "")
    assert newer.stderr == (f"graphrag-tui: error: Cannot read the search index {index}: invalid fts5 file format "
                            "(found 5, expected 4) - run 'rebuild': delete it, and the next search builds it again\n")
    with contextlib.closing(sqlite3.connect(index)) as db:
        db.execute("DROP TABLE ids_claim")
        db.commit()
    again = run_cli("search", str(store), "pie", "--json", env=env)
    assert (again.code, again.json) == (0, found.json) and "building the search index" in again.stderr
    index.unlink()
    index.mkdir()
    folder = run_cli("search", str(store), "pie", env=env)
    assert (folder.code, folder.stdout) == (2, "")
    assert folder.stderr.splitlines()[-1] == f"graphrag-tui: error: Cannot write the search index {index}: Is a directory"


def test_show_takes_the_first_kind_and_names_the_others(store: Path, env: dict[str, str]) -> None:
    run = run_cli("show", str(store), "carol/89", "--json", env=env)
    assert run.code == 0
    assert run.stderr == ("note: carol/89 is also an entity and claim id: showing the community "
                          "(use --kind or KIND:ID)\n")
    shown = run.json
    assert shown["kind"] == "community"
    assert (shown["id"], shown["name"], shown["level"], shown["is_leaf"]) == ("carol/89", "Crew dinner", 0, True)
    assert [c["id"] for c in shown["claims"]] == ["carol/c3"]
    assert [c["id"] for c in shown["chunks"]] == ["carol/k2"]


def test_show_entity_by_prefix_and_by_kind(store: Path, env: dict[str, str]) -> None:
    expected = {
        "kind": "entity", "id": "carol/89", "namespace": "carol", "name": "JONAS HARROW",
        "description": "Quill's old partner, away seven years",
        "communities": [{"id": "carol/0", "name": "Guards", "level": 0},
                        {"id": "carol/1", "name": "Harrow's visit", "level": 1}],
        "claims": [{"id": "carol/89", "namespace": "carol", "subject_id": "carol/89", "subject": "JONAS HARROW",
                    "object_id": "carol/e2", "object": "ELIAS QUILL",
                    "description": "Harrow warns Quill of three inspectors", "community_id": "carol/1",
                    "chunk_id": "carol/k1", "document_id": "carol/d1"}],
    }
    by_prefix = run_cli("show", str(store), "entity:carol/89", "--json", env=env)
    by_kind = run_cli("show", str(store), "carol/89", "--kind", "entity", "--json", env=env)
    assert (by_prefix.code, by_prefix.stderr, by_prefix.json) == (0, "", expected)
    assert (by_kind.code, by_kind.stderr, by_kind.json) == (0, "", expected)


def test_show_claim_and_chunk(store: Path, env: dict[str, str]) -> None:
    claim = run_cli("show", str(store), "claim:carol/89", "--json", env=env).json
    assert claim == {
        "kind": "claim", "id": "carol/89", "namespace": "carol", "subject_id": "carol/89", "subject": "JONAS HARROW",
        "object_id": "carol/e2", "object": "ELIAS QUILL", "description": "Harrow warns Quill of three inspectors",
        "community_id": "carol/1", "chunk_id": "carol/k1", "document_id": "carol/d1",
        "chunk": {"id": "carol/k1", "namespace": "carol", "content": "Harrow was away, to begin with.",
                  "document_id": "carol/d1", "document_title": "A Harbour Ledger"},
    }
    chunk = run_cli("show", str(store), "carol/k2", "--json", env=env).json
    assert chunk == {
        "kind": "chunk", "id": "carol/k2", "namespace": "carol", "content": "The pie was carved at last.",
        "document_id": "carol/d1", "document_title": "A Harbour Ledger",
        "claims": [{"id": "carol/c3", "namespace": "carol", "subject_id": "carol/e3", "subject": "TOM PENROSE",
                    "object_id": None, "object": None, "description": "Penrose carves the pie",
                    "community_id": "carol/89", "chunk_id": "carol/k2", "document_id": None}],
    }


def test_a_bare_number_is_a_community(store: Path, env: dict[str, str]) -> None:
    run = run_cli("show", str(store), "2", "--json", env=env)
    assert (run.code, run.json["kind"], run.json["id"]) == (0, "community", "carol/2")


@pytest.mark.parametrize(("args", "message"), [
    (("nope",), "graphrag-tui: error: No community, entity, claim or chunk 'nope' in this store (namespace carol)\n"),
    (("claim:carol/k1",), "graphrag-tui: error: No claim 'carol/k1' in this store (namespace carol)\n"),
    (("7",), "graphrag-tui: error: No community, entity, claim or chunk '7' in this store (namespace carol)\n"),
])
def test_unknown_ids_are_one_line_exit_2(store: Path, env: dict[str, str], args: tuple[str, ...], message: str) -> None:
    run = run_cli("show", str(store), *args, env=env)
    assert (run.code, run.stdout, run.stderr) == (2, "", message)


def test_tree_json(store: Path, env: dict[str, str]) -> None:
    def node(cid: str, name: str, level: int, leaves: int, claims: int, children: list) -> dict:
        return {"id": cid, "name": name, "level": level, "leaf_count": leaves, "claim_count": claims,
                "child_count": len(children), "rank": None, "children": children}

    run = run_cli("tree", str(store), "--json", env=env)
    assert run.code == 0
    assert run.json == {"namespace": "carol", "roots": [
        node("carol/0", "Guards", 0, 2, 2, [node("carol/1", "Harrow's visit", 1, 1, 1, []),
                                             node("carol/2", "The counting house", 1, 1, 1, [])]),
        node("carol/89", "Crew dinner", 0, 1, 1, []),
    ]}
    roots = run_cli("tree", str(store), "--depth", "1", "--json", env=env).json["roots"]
    assert [(r["id"], r["child_count"], r["children"]) for r in roots] == [("carol/0", 2, []), ("carol/89", 0, [])]


def test_tree_text_is_inert(tmp_path: Path, env: dict[str, str]) -> None:
    from tests.stores import build_store

    store = build_store(tmp_path / "evil.db", [
        {"id": "ns/1", "community_name": "\x1b]52;c;AAAA\x07evil\u202e", "summary_content": "s"},
    ])
    run = run_cli("tree", str(store), env=env)
    assert run.code == 0
    assert "\x1b" not in run.stdout and "\u202e" not in run.stdout
    assert run.stdout == "namespace ns: 1 root\n  ns/1  ␛]52;c;AAAA␇evil  (level 0, 1 leaf, 0 claims)\n"
    # search: inert in words, exact in JSON (its title had the visible symbols written into it)
    found = run_cli("search", str(store), "evil", env=env)
    assert found.code == 0 and "\x1b" not in found.stdout and "\u202e" not in found.stdout
    as_json = run_cli("search", str(store), "evil", "--json", env=env)
    assert as_json.json["results"]["community"][0]["title"] == "\x1b]52;c;AAAA\x07evil\u202e"
    assert "\x1b" not in as_json.stdout  # (escaped as \u001b)


def test_han_text_is_searched_character_by_character(tmp_path: Path, env: dict[str, str]) -> None:
    from tests.stores import build_store

    store = build_store(tmp_path / "tea.db", [
        {"id": "zh/1", "community_name": "绿茶", "summary_content": "中国的绿茶历史悠久。"},
        {"id": "zh/2", "community_name": "红茶", "summary_content": "红茶在十七世纪传入欧洲。"},
    ])
    run = run_cli("search", str(store), "绿茶", "--kind", "community", "--json", env=env)
    assert run.code == 0, run.stderr
    assert run.json["results"]["community"] == [
        {"id": "zh/1", "kind": "community", "title": "绿茶", "snippet": "中国的绿茶历史悠久。"},
    ]
    both = run_cli("search", str(store), "茶", "--kind", "community", "--json", env=env).json
    assert sorted(hit["id"] for hit in both["results"]["community"]) == ["zh/1", "zh/2"]


def _without_primary_key(store: Path, rows: list[tuple[str, int, str | None]]) -> None:
    """The store's communities replaced by `rows` (id, level, parent) in a table without its
    primary key, as a hand-made store may have it: an id may come twice."""
    import sqlite3

    with sqlite3.connect(store) as db:
        db.execute("CREATE TABLE loose AS SELECT * FROM rag_community_summaries WHERE 0")
        db.execute("DROP TABLE rag_community_summaries")
        db.execute("ALTER TABLE loose RENAME TO rag_community_summaries")
        db.executemany("INSERT INTO rag_community_summaries (id, namespace, community_name, summary_content, level, "
                       "parent_community_id) VALUES (?, 'ns', ?, 's', ?, ?)", [(c, c.upper(), lv, p) for c, lv, p in rows])
    db.close()


def test_an_id_that_comes_twice_in_a_cycle_ends_and_says_what_is_apart(tmp_path: Path, env: dict[str, str]) -> None:
    """`a` a root and, again, a child of `b`, itself a child of `a`: `tree` went round the
    cycle for ever, its memory growing (the app's Explore screen too)."""
    from tests.stores import build_store

    store = build_store(tmp_path / "loose.db", [{"id": "x", "summary_content": "s"}])
    _without_primary_key(store, [("a", 0, None), ("c", 1, "a"), ("a", 1, "b"), ("b", 1, "a")])
    run = run_cli("tree", str(store), env=env, timeout=30)
    assert (run.code, run.stderr) == (0, "")
    assert run.stdout == "namespace ns: 0 roots (3 in a cycle of parent links, reached from no root)\n"


def test_a_community_that_is_its_own_parent_shows_as_a_root_and_no_leaf(tmp_path: Path, env: dict[str, str]) -> None:
    """A row that names itself as parent is no leaf (SPEC §2): planning sends its claims in
    no Map text, and `show` says it has no leaves. `tree` counted it a leaf with its claims."""
    from tests.stores import build_store

    store = build_store(
        tmp_path / "self.db",
        [{"id": "s", "summary_content": "s", "parent_community_id": "s"},
         {"id": "t", "summary_content": "t", "parent_community_id": "t"},
         {"id": "u", "summary_content": "u", "parent_community_id": "t", "level": 1}],
        entities=[{"id": "e", "name": "E"}],
        claims=[{"id": f"c{i}", "subject_entity_id": "e", "description": "d", "community_summary_id": cid}
                for i, cid in enumerate(["s", "s", "t", "u"])],
    )
    run = run_cli("tree", str(store), env=env)
    assert (run.code, run.stderr) == (0, "")
    assert run.stdout == ("namespace ns: 2 roots\n"
                          "  s  (no name)  (level 0, 0 leaves, 0 claims)\n"
                          "  t  (no name)  (level 0, 1 leaf, 1 claim)\n"
                          "    u  (no name)  (level 1, 1 leaf, 1 claim)\n")
    shown = run_cli("show", str(store), "s", "--json", env=env).json
    assert (shown["is_leaf"], shown["leaf_ids"], shown["children"]) == (False, [], ["s"])


def test_ids_that_come_twice_on_every_level_are_walked_once(tmp_path: Path, env: dict[str, str]) -> None:
    """Each level's id twice under the same parent: the walk doubled at every level (2^40)."""
    from tests.stores import build_store

    store = build_store(tmp_path / "loose.db", [{"id": "x", "summary_content": "s"}])
    _without_primary_key(store, [("x0", 0, None)] + [(f"x{i}", i, f"x{i - 1}") for i in range(1, 41) for _ in (1, 2)])
    run = run_cli("tree", str(store), "--json", "--depth", "3", env=env, timeout=30)
    assert run.code == 0, run.stderr
    top = run.json["roots"]
    assert [(n["id"], n["leaf_count"], n["child_count"]) for n in top] == [("x0", 1, 1)]
    assert [c["id"] for c in top[0]["children"]] == ["x1"] and [c["id"] for c in top[0]["children"][0]["children"]] == ["x2"]
    text = run_cli("tree", str(store), env=env, timeout=30)
    assert text.code == 0 and len(text.stdout.splitlines()) == 42  # the header and 41 communities


def test_an_entity_whose_name_is_longer_than_sqlites_like_patterns_finds_its_communities(
        tmp_path: Path, env: dict[str, str]) -> None:
    """SQLite refuses LIKE patterns over 50,000 bytes: `show` of such an entity was
    `Cannot read store ...: LIKE or GLOB pattern too complex`, exit 2."""
    import json

    from tests.stores import build_store

    name = "Harbour" + "x" * 60_000
    store = build_store(tmp_path / "long.db", [
        {"id": "ns/1", "community_name": "Long", "summary_content": "s", "members": json.dumps([name])},
        {"id": "ns/2", "community_name": "Prefix only", "summary_content": "s", "members": json.dumps([name[:-1]])},
    ], entities=[{"id": "e1", "name": name}])
    run = run_cli("show", str(store), "entity:e1", "--json", env=env)
    assert (run.code, run.stderr) == (0, "")
    assert run.json["communities"] == [{"id": "ns/1", "name": "Long", "level": 0}]

