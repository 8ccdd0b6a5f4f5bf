"""A search result's snippet: the words around its first match, marked; of a long text only
a stretch around that match is read (cleaning all of a 100 MB text, and listing every match
in it, took 30 s and 2 GB a result)."""

from __future__ import annotations

import tracemalloc

from graphrag_tui.store.marks import query_terms, snippet


def test_a_short_text_is_cut_around_its_first_match() -> None:
    text = "Tolls pay for it. " * 20 + "The Bridge\x1b budget of 640 million comes from dues."
    shown, marks = snippet(text, query_terms("bridge"))
    assert shown == "…" + "Tolls pay for it. " * 6 + "The Bridge␛ budget of 640 million comes from dues."
    assert [shown[s:e] for s, e in marks] == ["Bridge"]


def test_a_long_text_is_read_only_around_its_match() -> None:
    text = "word " * 2_000_000 + "the Bridge\x1b budget " + "word " * 100
    tracemalloc.start()
    try:
        shown, marks = snippet(text, query_terms("bridge"))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000  # the 10 MB text was cleaned whole, and every word listed
    assert shown.startswith("…word word") and shown.endswith(" w…") and len(shown) == 162
    assert [shown[s:e] for s, e in marks] == ["Bridge"] and "the Bridge␛ budget" in shown


def test_a_long_text_with_its_match_near_the_start_and_one_with_none() -> None:
    terms = query_terms("ledger*")
    shown, marks = snippet("The Ledgers of the port. " + "x " * 100_000, terms)
    assert shown.startswith("The Ledgers of the port.") and [shown[s:e] for s, e in marks] == ["Ledgers"]
    assert snippet("y " * 100_000, terms) == ("y " * 80 + "…", ())
