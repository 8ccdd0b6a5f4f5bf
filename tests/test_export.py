"""The export: result JSON (SPEC §5) and the Markdown provenance report."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from graphrag_tui.engine.batcher import PartRef
from graphrag_tui.engine.options import SearchOptions
from graphrag_tui.engine.result import (
    Attempt,
    BatchResult,
    ReduceCandidate,
    ReduceReport,
    SearchResult,
    SelectedAnswer,
)
from graphrag_tui.errors import InputError
from graphrag_tui.export import RunInfo, export_paths, markdown_report, write_export
from graphrag_tui.store import CommunityStore

from .stores import build_store

LONG = "Tolls fund the bridge. " * 40  # 920 characters: the report quotes 600


@pytest.fixture
def store(tmp_path: Path):
    path = build_store(
        tmp_path / "store.db",
        [
            {"id": "ns/0", "community_name": "Harbour", "summary_content": LONG},
            {"id": "ns/1", "community_name": "Bridge\nfunding", "level": 1,
             "parent_community_id": "ns/0",
             "summary_content": "The bridge is funded by the port authority.\n# Not a heading"},
            {"id": "ns/2", "level": 1, "parent_community_id": "ns/0",
             "summary_content": "Fishing fleets land at dawn \x1b[31m."},
        ],
        entities=[
            {"id": "e1", "name": "Port Authority"},
            {"id": "e2", "name": "Harbour\nBridge"},
        ],
        documents=[{"id": "d1", "title": "Annual report 中文"}, {"id": "d2"}],
        chunks=[
            {"id": "k1", "parent_id": "d1",
             "content": "The authority approved the bridge budget.\n\n## Budget\n- 40 million"},
            {"id": "k2", "parent_id": "d2", "content": "Tolls start in May."},
        ],
        claims=[
            {"id": "c1", "subject_entity_id": "e1", "object_entity_id": "e2",
             "description": "pays for\nthe bridge", "source_chunk_id": "k1",
             "community_summary_id": "ns/1"},
            {"id": "c2", "subject_entity_id": "e1", "description": "collects tolls",
             "source_chunk_id": "k2", "community_summary_id": "ns/1"},
            {"id": "c3", "subject_entity_id": "e1", "description": "meets monthly",
             "source_chunk_id": "k404", "community_summary_id": "ns/1"},
            {"id": "c4", "subject_entity_id": "e1", "description": "cites nothing",
             "community_summary_id": "ns/1"},
        ],
    )
    with CommunityStore.open(path) as opened:
        yield opened


def make_result() -> SearchResult:
    return SearchResult(
        query="Who pays\nfor the bridge?",
        namespace="ns",
        level=1,
        seed=42,
        status="partial",
        answer="The port authority pays (中文).\n# Not a heading\n\n- a list",
        summary_count=3,
        batch_count=2,
        failed_batch_count=1,
        batches=[
            BatchResult(
                index=0, community_ids=("ns/1", "ns/2"),
                parts=(PartRef(community_id="ns/1", part=1), PartRef(community_id="ns/2", part=1)),
                prompt_tokens=250,
                attempts=[Attempt(attempt=1, started_at="2026-01-01T00:00:00+00:00",
                                  duration_s=0.5, raw_response='{"answer": "a", "usefulness": 80}')],
                usefulness=80, answer="The authority pays.", status="succeeded",
            ),
            BatchResult(
                index=1, community_ids=("ns/0",),
                parts=(PartRef(community_id="ns/0", part=1),),
                prompt_tokens=300,
                attempts=[
                    Attempt(attempt=1, started_at="2026-01-01T00:00:00+00:00", duration_s=1.25,
                            error_kind="invalid_json", error="not JSON", raw_response="oops \x1b"),
                    Attempt(attempt=2, started_at="2026-01-01T00:00:02+00:00", duration_s=120.0,
                            error_kind="timeout", error="timed out"),
                ],
                status="failed",
            ),
        ],
        reduce=ReduceReport(
            candidates=[ReduceCandidate(batch_index=0, usefulness=80,
                                        community_ids=("ns/1", "ns/2"), decision="selected")],
            prompt_tokens=180, budget=7000,
        ),
        selected_map_answers=[
            SelectedAnswer(answer="The authority pays.\n> quoted", usefulness=80,
                           community_ids=("ns/1", "ns/2")),
            SelectedAnswer(answer="Tolls too.", usefulness=33.5,
                           community_ids=("ns/2", "ns/0", "ns/404")),
        ],
    )


EXPECTED_MD = """\
# Who pays for the bridge?

## Run

- Status: partial
- Namespace: ns
- Level: 1
- Seed: 42
- Summaries: 3
- Map batches: 2 (1 failed)

## Answer

> The port authority pays (中文).
> # Not a heading
>
> - a list

## Selected Map answers

### 1. Usefulness 80

Communities: ns/1, ns/2

> The authority pays.
> > quoted

### 2. Usefulness 33.5

Communities: ns/2, ns/0, ns/404

> Tolls too.

## Failed batches

### Batch 1

Communities: ns/0

- Attempt 1: invalid_json: not JSON
- Attempt 2: timeout: timed out

## Communities

### Community ns/1

- Name: Bridge funding
- Level: 1 (leaf)

Summary:

> The bridge is funded by the port authority.
> # Not a heading

Claims:

- Port Authority -> Harbour Bridge: pays for the bridge (chunk k1)
- Port Authority: collects tolls (chunk k2)
- Port Authority: meets monthly (chunk k404)
- Port Authority: cites nothing

Sources:

Chunk k1, from *Annual report 中文*:

> The authority approved the bridge budget.
>
> ## Budget
> - 40 million

Chunk k2, from *(untitled document)*:

> Tolls start in May.

- Chunk k404: _not found in the store._

### Community ns/2

- Name: (no name)
- Level: 1 (leaf)

Summary:

> Fishing fleets land at dawn ␛\\[31m.

_No claims._

### Community ns/0

- Name: Harbour
- Level: 0

Summary:

> {excerpt}…

Claims:

- Port Authority -> Harbour Bridge: pays for the bridge (chunk k1)
- Port Authority: collects tolls (chunk k2)
- Port Authority: meets monthly (chunk k404)
- Port Authority: cites nothing

Sources:

Chunk k1, from *Annual report 中文*:

> The authority approved the bridge budget.
>
> ## Budget
> - 40 million

Chunk k2, from *(untitled document)*:

> Tolls start in May.

- Chunk k404: _not found in the store._

### Community ns/404

_Not found in the store._
""".replace("{excerpt}", LONG[:599].rstrip())


def test_markdown_report_exact(store) -> None:
    assert markdown_report(make_result(), store) == EXPECTED_MD


def test_markdown_report_with_the_run_metadata_and_each_community_once(store) -> None:
    info = RunInfo(
        started=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC), duration_s=83.25, model="m1 @ 127.0.0.1:8080",
        store="/data/harbour.db", options=SearchOptions(map_budget=330, map_reserve=0, concurrency=2),
    )
    report = markdown_report(make_result(), store, info)
    assert report.split("## Answer")[0] == (
        "# Who pays for the bridge?\n\n"
        "## Run\n\n"
        "- Time: 2026-01-02 03:04:05 UTC\n"
        "- Duration: 83.2 s\n"
        "- Status: partial\n"
        "- Model: m1 @ 127.0.0.1:8080\n"
        "- Store: /data/harbour.db\n"
        "- Namespace: ns\n"
        "- Level: 1\n"
        "- Seed: 42\n"
        "- Budgets: Map 330 tokens (reserve 0), Reduce 8000 tokens (reserve 1024); concurrency 2\n"
        "- Summaries: 3\n"
        "- Map batches: 2 (1 failed)\n\n"
    )
    # Everything after the metadata is as without it; ns/2, cited by both answers, once.
    assert report.split("## Answer")[1] == EXPECTED_MD.split("## Answer")[1]
    assert report.count("### Community ns/2") == 1


def test_markdown_report_without_answers(store) -> None:
    result = SearchResult(
        query="  ", namespace="ns", level="leaf", seed=None, status="no_results",
        detail="no Map answer was useful", summary_count=3, batch_count=1,
        reduce=ReduceReport(budget=7000),
    )
    assert markdown_report(result, store) == (
        "# (empty question)\n\n"
        "## Run\n\n"
        "- Status: no_results\n"
        "- Namespace: ns\n"
        "- Level: leaf\n"
        "- Seed: none (not shuffled)\n"
        "- Summaries: 3\n"
        "- Map batches: 1 (0 failed)\n"
        "- Detail: no Map answer was useful\n\n"
        "## Answer\n\n"
        "_No answer._\n\n"
        "## Selected Map answers\n\n"
        "_None._\n"
    )


def test_write_export_json_round_trip_and_markdown(store, tmp_path: Path) -> None:
    result = make_result()
    json_path, md_path = write_export(result, store, tmp_path / "run.json")
    assert (json_path, md_path) == (tmp_path / "run.json", tmp_path / "run.md")
    text = json_path.read_text(encoding="utf-8")
    assert text == json.dumps(result.model_dump(mode="json"), ensure_ascii=False, indent=2) + "\n"
    assert "中文" in text and "\\u001b" in text  # UTF-8 kept, control characters escaped
    data = json.loads(text)
    assert SearchResult.model_validate(data) == result
    assert list(data) == [
        "query", "namespace", "level", "seed", "status", "answer", "error", "detail",
        "summary_count", "batch_count", "failed_batch_count", "batches", "reduce",
        "selected_map_answers", "usage_total", "estimated_prompt_tokens", "cost", "prompts", "selection",
    ]
    assert data["error"] is None and data["level"] == 1
    assert data["batches"][1] == {
        "index": 1, "community_ids": ["ns/0"], "parts": [{"community_id": "ns/0", "part": 1}],
        "prompt_tokens": 300,
        "attempts": [
            {"attempt": 1, "started_at": "2026-01-01T00:00:00+00:00", "duration_s": 1.25,
             "error_kind": "invalid_json", "error": "not JSON", "raw_response": "oops \x1b",
             "raw_response_bytes": None, "usage": None},
            {"attempt": 2, "started_at": "2026-01-01T00:00:02+00:00", "duration_s": 120.0,
             "error_kind": "timeout", "error": "timed out", "raw_response": None,
             "raw_response_bytes": None, "usage": None},
        ],
        "usefulness": None, "answer": None, "status": "failed",
    }
    assert data["reduce"] == {
        "candidates": [{"batch_index": 0, "usefulness": 80, "community_ids": ["ns/1", "ns/2"],
                        "decision": "selected"}],
        "prompt_tokens": 180, "budget": 7000, "attempts": [],
    }
    assert data["selected_map_answers"][1] == {
        "answer": "Tolls too.", "usefulness": 33.5, "community_ids": ["ns/2", "ns/0", "ns/404"]}
    assert md_path.read_text(encoding="utf-8") == EXPECTED_MD


@pytest.mark.parametrize(
    ("typed", "json_name", "md_name"),
    [
        ("x", "x.json", "x.md"),
        ("x.md", "x.json", "x.md"),
        ("x.json", "x.json", "x.md"),
        ("x.JSON", "x.json", "x.md"),
        ("run.v2", "run.v2.json", "run.v2.md"),
    ],
)
def test_export_paths(tmp_path: Path, typed: str, json_name: str, md_name: str) -> None:
    assert export_paths(tmp_path / typed) == (tmp_path / json_name, tmp_path / md_name)


def test_write_export_with_md_or_bare_name_writes_both(store, tmp_path: Path) -> None:
    for typed in ("a.md", "b"):
        json_path, md_path = write_export(make_result(), store, tmp_path / typed)
        assert json_path.exists() and md_path.exists()
        assert md_path.read_text(encoding="utf-8") == EXPECTED_MD


def test_write_export_errors_are_one_line_input_errors(store, tmp_path: Path) -> None:
    with pytest.raises(InputError) as missing:
        write_export(make_result(), store, tmp_path / "nowhere" / "run.json")
    assert str(missing.value) == f"Cannot export: folder {tmp_path / 'nowhere'} does not exist"

    (tmp_path / "taken.json").mkdir()
    with pytest.raises(InputError) as folder:
        write_export(make_result(), store, tmp_path / "taken")
    assert str(folder.value) == f"Cannot export: {tmp_path / 'taken.json'} is a folder"

    (tmp_path / "file").write_text("")
    with pytest.raises(InputError) as not_folder:
        write_export(make_result(), store, tmp_path / "file" / "run")
    assert str(not_folder.value) == f"Cannot export: {tmp_path / 'file'} is not a folder"


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0,
                    reason="root ignores file permissions")
def test_write_export_permission_denied(store, tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        with pytest.raises(InputError) as denied:
            write_export(make_result(), store, locked / "run")
        assert str(denied.value) == f"Cannot write {locked / 'run.json'}: Permission denied"
        assert "\n" not in str(denied.value)
    finally:
        locked.chmod(0o700)


def test_the_report_gives_tokens_and_cost_when_the_run_has_them(store) -> None:
    from graphrag_tui.engine import Cost, Usage

    result = make_result().model_copy(update={
        "usage_total": Usage(prompt_tokens=6500, completion_tokens=107, cached_tokens=400, total_tokens=6607),
        "estimated_prompt_tokens": 6200,
        "cost": Cost(input=0.0122, output=0.000856, cached=0.0002, total=0.013256),
    })
    lines = markdown_report(result, store).splitlines()
    assert "- Tokens: 6500 prompt (6200 estimated, 400 cached), 107 completion, 6607 total" in lines
    assert "- Cost: $0.0133 (input $0.0122, cached $0.0002, output $0.0009)" in lines
    assert not any(line.startswith(("- Tokens", "- Cost")) for line in markdown_report(make_result(), store).splitlines())


def test_html_in_untrusted_text_is_written_as_text(store) -> None:
    """A reply's `<script>` or `<img onerror=…>` reached the report as HTML, which a
    Markdown viewer renders; a `<` that starts no tag stays as it is."""
    result = SearchResult(
        query="Is a < b? <img src=x onerror=alert(1)>", namespace="ns", level="leaf", seed=None, status="completed",
        answer="Yes.\n<script>alert(1)</script>\n<!-- hidden -->", summary_count=0, batch_count=0,
        reduce=ReduceReport(budget=7000),
    )
    report = markdown_report(result, store)
    assert report.startswith("# Is a < b? &lt;img src=x onerror=alert(1)>\n")
    assert "> Yes.\n> &lt;script>alert(1)&lt;/script>\n> &lt;!-- hidden -->\n" in report
    assert "<script" not in report and "<img" not in report and "<!--" not in report


def test_links_images_footnotes_and_link_definitions_in_replies_stay_text_in_the_report() -> None:
    """A Map answer's `javascript:` link and remote image took effect, its footnote showed
    outside every quote, and its link reference definition turned the report's own
    citations into links (found by a probe). Brackets and backslashes are escaped: a viewer
    shows them as written."""
    hostile = ("See [x](javascript:alert(1)) ![](https://evil.example/t.png) [^n] \\[still text]\n"
               "[Data: Reports (1, 2)]: javascript:alert(2)\n[^n]: **Analyst note**")
    result = make_result().model_copy(update={
        "answer": "The port [Data: Reports (1, 2)].",
        "selected_map_answers": [SelectedAnswer(answer=hostile, usefulness=80, community_ids=("ns/1",))]})
    report = markdown_report(result, None)
    assert "> The port \\[Data: Reports (1, 2)\\].\n" in report
    assert ("> See \\[x\\](javascript:alert(1)) !\\[\\](https://evil.example/t.png) \\[^n\\] \\\\\\[still text\\]\n"
            "> \\[Data: Reports (1, 2)\\]: javascript:alert(2)\n> \\[^n\\]: **Analyst note**\n") in report
