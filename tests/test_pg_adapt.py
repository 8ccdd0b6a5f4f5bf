"""The row-by-row rules that fit a store's rows to graphrag-ts's PostgreSQL tables."""

from __future__ import annotations

import hashlib

import pytest

from graphrag_tui.store.pg_adapt import (
    MAX_LISTED,
    Adaptations,
    StrictRefusal,
    adapt_row,
    description_hash,
    members_json,
    members_list,
    pg_columns,
    shorten,
)


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_description_hash_is_graphrag_ts_trim_and_lowercase() -> None:
    assert description_hash("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert description_hash("  Wexley IS Mean\n") == sha("wexley is mean")
    # JavaScript's trim removes U+FEFF and U+3000 but not U+0085 or U+001F (Python's strip would)
    assert description_hash("\ufeff\u3000A\u2028") == sha("a")
    assert description_hash("\x85A\x1f") == sha("\x85a\x1f")
    # inner whitespace is kept, not collapsed
    assert description_hash("a  b") == sha("a  b")
    # a lone surrogate is hashed as U+FFFD, as Node encodes it; a pair is one character
    assert description_hash("x\ud800") == sha("x\ufffd")
    assert description_hash("\ud83d\ude00") == sha("\U0001f600")


def test_shorten_fits_and_keeps_long_names_apart() -> None:
    assert shorten("A" * 200, 200) == "A" * 200
    long_a, long_b = "N" * 230 + "a", "N" * 230 + "b"
    short_a, short_b = shorten(long_a, 200), shorten(long_b, 200)
    assert len(short_a) == len(short_b) == 200
    assert short_a == "N" * 190 + " ~" + sha(long_a)[:8]
    assert short_a != short_b
    assert shorten("é" * 101, 100) == "é" * 90 + " ~" + sha("é" * 101)[:8]  # characters, not bytes


def test_members_text_and_array() -> None:
    assert members_list('["A", "B"]') == (["A", "B"], None)
    assert members_list(None) == ([], "NULL became the empty list")
    assert members_list("{oops") == ([], "not JSON: became the empty list")
    assert members_list('{"a": 1}') == ([], "not a JSON array: became the empty list")
    assert members_list('["A", 5]') == (["A", "5"], "items that are not text kept as their JSON")
    assert members_list(["X"]) == (["X"], None)
    assert members_json(["A", "É"]) == '["A", "É"]'
    assert members_json(None) == "[]"


def test_adapt_claim_fills_hash_and_empties_null_description() -> None:
    report = Adaptations()
    row = ("c1", "ns", "e1", None, None, None, None, "k1", "quoted")
    adapted = adapt_row("rag_claims", row, report, extras=("source_text",))
    assert pg_columns("rag_claims", ("source_text",))[-2:] == ("source_text", "description_hash")
    assert adapted == ("c1", "ns", "e1", None, "", None, None, "k1", "quoted", sha(""))
    assert report.count("emptied") == 1
    assert report.lines() == [
        "Adaptations: 1 value(s) adapted, 0 row(s) skipped",
        "  rag_claims c1: description NULL became ''",
    ]


def test_adapt_entity_shortens_and_community_members() -> None:
    report = Adaptations()
    name = "X" * 250
    adapted = adapt_row("rag_entities", ("e1", "ns", name, "d"), report)
    assert adapted == ("e1", "ns", shorten(name, 200), "d")
    community = adapt_row("rag_community_summaries", ("k1", "ns", None, "text", 0, None, '["A"]'), report)
    assert community == ("k1", "ns", "", "text", 0, None, ["A"])
    assert report.count("shortened") == 1 and report.count("emptied") == 1
    assert report.listed[0].detail == f"name of 250 characters shortened to 200: {shorten(name, 200)!r}"


def test_rows_that_cannot_be_adapted_are_skipped() -> None:
    report = Adaptations()
    assert adapt_row("rag_children", ("k1", "ns", None, "text"), report) is None
    assert adapt_row("rag_claims", ("c1", "ns", None, None, "d", None, None, None), report) is None
    assert adapt_row("rag_parents", ("p1", "ns", "t", "a\x00b"), report) is None
    assert report.skipped == 3 and report.adapted == 0
    assert [c.line() for c in report.listed] == [
        "rag_children k1: skipped: parent_id is NULL",
        "rag_claims c1: skipped: subject_entity_id is NULL",
        "rag_parents p1: skipped: content holds a NUL character, which PostgreSQL text cannot",
    ]
    assert report.to_json()["skipped"] == 3


def test_strict_refuses_at_the_first_change_and_lets_clean_rows_through() -> None:
    report = Adaptations(strict=True)
    assert adapt_row("rag_entities", ("e1", "ns", "WEXLEY", None), report) == ("e1", "ns", "WEXLEY", None)
    with pytest.raises(StrictRefusal) as refused:
        adapt_row("rag_entities", ("e2", "ns", "Y" * 201, None), report)
    assert str(refused.value).startswith("--strict: rag_entities e2: name of 201 characters shortened to 200")


def test_the_listing_is_bounded_and_the_rest_counted() -> None:
    report = Adaptations()
    for i in range(MAX_LISTED + 5):
        adapt_row("rag_children", (f"k{i}", "ns", "p", None), report)
    assert report.count("emptied", "rag_children") == MAX_LISTED + 5
    assert len(report.listed) == MAX_LISTED
    assert report.lines()[-1] == "  ... and 5 more of rag_children (emptied)"
