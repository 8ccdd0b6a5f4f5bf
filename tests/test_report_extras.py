"""A GraphRAG report's rank, rating explanation and findings (issue 15): imported as optional
columns of rag_community_summaries, read by the store where present, shown by `show`; and
the pieces of dynamic selection that need no server (the rating reply, the events)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from graphrag_tui.engine import AttemptFailed, ChatMessage, ChatRequest, CommunityRated
from graphrag_tui.engine.prompts import RATE_TEMPLATE, rate_messages, rate_prompt
from graphrag_tui.engine.replies import ReplyError, parse_rate_reply
from graphrag_tui.importer import import_graphrag
from graphrag_tui.models.extractive import ExtractiveModel
from graphrag_tui.store import CommunityStore
from tests.cli_runner import run_cli
from tests.graphrag_fixtures import drop_column, index_tables, write_index
from tests.stores import build_store


@pytest.mark.parametrize("layout", ["1.x", "2.x", "3.x"])
def test_the_import_keeps_rank_rating_explanation_and_findings(tmp_path: Path, layout: str) -> None:
    store = tmp_path / "s.db"
    import_graphrag(write_index(tmp_path / "out", layout), store, "ns")
    with sqlite3.connect(store) as conn:
        rows = conn.execute("SELECT id, rank, rating_explanation, findings FROM rag_community_summaries "
                            "ORDER BY id").fetchall()
    assert [r[0] for r in rows] == ["ns/0", "ns/1", "ns/10", "ns/2", "ns/3", "ns/9"]
    assert {r[1:] for r in rows} == {(5.0, "made up", '[{"summary": "a finding", "explanation": "because"}]')}
    with CommunityStore.open(store) as opened:
        detail = opened.community("ns/2")
        assert detail is not None
        assert (detail.rank, detail.rating_explanation) == (5.0, "made up")
        assert [(f.summary, f.explanation) for f in detail.findings] == [("a finding", "because")]
        assert [n.rank for n in opened.selection_nodes("ns")] == [5.0] * 6


def test_reports_without_those_columns_import_as_before(tmp_path: Path) -> None:
    tables = index_tables()
    for column in ("rank", "rating_explanation", "findings"):
        tables["community_reports"] = drop_column(tables["community_reports"], column)
    store = tmp_path / "s.db"
    import_graphrag(write_index(tmp_path / "out", tables=tables), store, "ns")
    with sqlite3.connect(store) as conn:
        columns = [row[1] for row in conn.execute("PRAGMA table_info(rag_community_summaries)")]
    assert "rank" not in columns and "findings" not in columns
    with CommunityStore.open(store) as opened:
        detail = opened.community("ns/2")
        assert detail is not None and (detail.rank, detail.rating_explanation, detail.findings) == (None, None, [])



def test_a_rank_written_as_text_is_kept_and_a_column_of_structs_is_one_line(tmp_path: Path) -> None:
    """A rank column of strings lost every rank with no note; a summary column of structs was
    stored as each struct's Python repr."""
    tables = index_tables()
    for number, report in enumerate(tables["community_reports"]):
        report["rank"] = ["7.5", " 3 ", "high", "nan", "1e999", "-2"][number % 6]
    store = tmp_path / "s.db"
    import_graphrag(write_index(tmp_path / "out", tables=tables), store, "ns")
    with sqlite3.connect(store) as conn:
        ranks = [r[0] for r in conn.execute("SELECT rank FROM rag_community_summaries ORDER BY rowid")]
    assert ranks == [7.5, 3.0, None, None, None, -2.0]
    import decimal

    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = write_index(tmp_path / "decimals")
    reports = pq.read_table(folder / "community_reports.parquet")
    ranks = pa.array([decimal.Decimal("2.5")] * reports.num_rows, pa.decimal128(5, 1))
    pq.write_table(reports.set_column(reports.schema.get_field_index("rank"), "rank", ranks),
                   folder / "community_reports.parquet")
    import_graphrag(folder, tmp_path / "d.db", "ns")
    with sqlite3.connect(tmp_path / "d.db") as conn:
        assert {r[0] for r in conn.execute("SELECT rank FROM rag_community_summaries")} == {2.5}
    tables = index_tables()
    for number, report in enumerate(tables["community_reports"]):
        report["summary"] = {"a": number, "b": "x"}
    folder = write_index(tmp_path / "structs", tables=tables)
    run = run_cli("import-graphrag", str(folder), str(tmp_path / "t.db"), "--namespace", "ns")
    assert (run.code, run.stdout) == (2, "")
    assert run.stderr == (f"graphrag-tui: error: {folder / 'community_reports.parquet'}: column 'summary' holds "
                          "struct<a: int64, b: string>, not text or a number\n")
    assert not (tmp_path / "t.db").exists()

def test_hostile_rank_and_findings_are_read_leniently(tmp_path: Path) -> None:
    store = build_store(tmp_path / "h.db", [
        {"id": "ns/1", "summary_content": "one", "rank": "high", "findings": "not json"},
        {"id": "ns/2", "summary_content": "two", "rank": float("nan"),
         "findings": json.dumps([{"summary": 5, "explanation": None}, "loose", {"summary": "[b]x[/b]"}])},
        {"id": "ns/3", "summary_content": "three", "rank": 7, "findings": json.dumps({"summary": "an object"})},
    ])
    with CommunityStore.open(store) as opened:
        one, two, three = (opened.community(f"ns/{n}") for n in (1, 2, 3))
        assert one is not None and (one.rank, one.findings) == (None, [])
        assert two is not None and two.rank is None
        assert [(f.summary, f.explanation) for f in two.findings] == [("5", ""), ("[b]x[/b]", "")]
        assert three is not None and (three.rank, three.findings) == (7.0, [])
        assert [n.rank for n in opened.selection_nodes("ns")] == [None, None, 7.0]
    shown = run_cli("show", str(store), "ns/2", "--json")
    assert shown.code == 0, shown.stderr
    assert shown.json["findings"] == [{"summary": "5", "explanation": ""}, {"summary": "[b]x[/b]", "explanation": ""}]


def test_the_rating_reply() -> None:
    assert parse_rate_reply('{"reason": " names Marley ", "rating": 3}') == (3, "names Marley")
    assert parse_rate_reply('```json\n{"rating": 4.0}\n```') == (4, "")
    assert parse_rate_reply('{"reason": null, "rating": 0}') == (0, "")
    assert parse_rate_reply(json.dumps({"reason": "x" * 5000, "rating": 2})) == (2, "x" * 2000 + "…")
    for raw, kind in [("three", "invalid_json"), ('{"rating": 6}', "invalid_fields"), ('{"rating": 2.5}', "invalid_fields"),
                      ('{"rating": true}', "invalid_fields"), ('{"reason": "x"}', "invalid_fields"),
                      ('{"rating": 1, "reason": 7}', "invalid_fields"), ("[3]", "invalid_fields")]:
        with pytest.raises(ReplyError) as caught:
            parse_rate_reply(raw)
        assert caught.value.kind == kind, raw


def test_the_rating_prompt() -> None:
    prompt = rate_prompt("Who is Halloran?", "Halloran was late.")
    assert prompt == RATE_TEMPLATE.format(query="Who is Halloran?", description="Halloran was late.")
    assert "---Information---\nHalloran was late.\n---Question---\nWho is Halloran?\n" in prompt
    assert prompt.endswith('{"reason": "...", "rating": 0}')
    assert rate_messages("Who is Halloran?", "Halloran was late.") == (
        ChatMessage(role="system", content=prompt), ChatMessage(role="user", content="Who is Halloran?"))


async def test_the_extractive_model_rates_by_its_map_score() -> None:
    model = ExtractiveModel()
    for text, rating in [("Marley was dead: to begin with.", 5), ("The baker sells bread.", 0)]:
        request = ChatRequest(stage="rate", messages=rate_messages("Marley dead", text), query="Marley dead",
                              content=text)
        reply = json.loads(await model.complete(request))
        assert reply["rating"] == rating


def test_events_name_the_rated_community_only_when_there_is_one() -> None:
    failed = AttemptFailed(t=1.0, batch_index=2, worker=1, attempt=1, error_kind="http", error="e", will_retry=True)
    assert "community_id" not in failed.model_dump(mode="json")
    rating_call = failed.model_copy(update={"batch_index": None, "community_id": "ns/7"})
    assert rating_call.model_dump(mode="json")["community_id"] == "ns/7"
    rated = CommunityRated(t=2.0, community_id="ns/7", level=1, rating=3, reason="r", votes=(3, 3, 0), kept=True)
    assert rated.model_dump(mode="json") == {
        "t": 2.0, "type": "community_rated", "community_id": "ns/7", "level": 1, "rating": 3, "reason": "r",
        "votes": [3, 3, 0], "kept": True, "failed": 0,
    }
