"""The built-in extractive model: BM25 Map scoring and Reduce merging, exact values."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from graphrag_tui.engine.ports import ChatMessage, ChatRequest
from graphrag_tui.models.extractive import ExtractiveModel, query_terms, score_batch, tokenize

MODEL = ExtractiveModel()

ENERGY = (
    "[Community ID: c1 | summary part 1]\n"
    "[Community summary]: Solar power grew fast. Coal use fell.\n"
    "[Supporting claims]:\n"
    "- Acme: Acme builds solar farms.\n"
    "[Community ID: c2 | summary part 1]\n"
    "[Community summary]: Fishing is popular."
)

CHINESE = (
    "[Community ID: 7 | summary part 1]\n"
    "[Community summary]: 量子计算发展迅速。经典计算机仍然重要。\n"
    "[Community ID: 8 | summary part 2]\n"
    "天气很好！"
)


def req(stage: str, query: str, content: str) -> ChatRequest:
    return ChatRequest(
        stage=stage,
        messages=(ChatMessage(role="user", content=f"{query}\n{content}"),),
        query=query,
        content=content,
    )


async def map_reply(query: str, content: str) -> dict:
    text = await MODEL.complete(req("map", query, content))
    data = json.loads(text)
    assert set(data) == {"answer", "usefulness"}
    assert isinstance(data["answer"], str)
    assert isinstance(data["usefulness"], int) and 0 <= data["usefulness"] <= 100
    return data


async def reduce_answer(content: str) -> str:
    data = json.loads(await MODEL.complete(req("reduce", "q", content)))
    assert set(data) == {"answer"}
    return data["answer"]


def test_description_says_not_an_llm() -> None:
    assert MODEL.description == "extractive, offline: not an LLM"


def test_tokenize() -> None:
    assert tokenize("What are the Solar-Power trends?") == ["solar", "power", "trends"]
    assert tokenize("量子计算") == ["量", "子", "计", "算", "量子", "子计", "计算"]
    assert tokenize("ＡＢＣ abc", drop_stopwords=False) == ["abc", "abc"]
    assert query_terms("量子计算是什么？") == ["量", "子", "计", "算", "量子", "子计", "计算"]
    assert query_terms("what is the") == ["what", "is", "the"]  # only stopwords: kept


async def test_map_matching_batch() -> None:
    # N=4 sentences, avgdl=15/4; idf(solar)=ln 2, idf(power)=ln(10/3); coverage 1;
    # best sentence (4 tokens, both terms once) scores 2.2/2.26 of the idf sum -> 0.97345;
    # usefulness = floor(100 * (1 + 0.97345) / 2 + 0.5) = 99.
    data = await map_reply("What is solar power?", ENERGY)
    assert data == {
        "answer": "Solar power grew fast. [Community c1]\nAcme: Acme builds solar farms. [Community c1]",
        "usefulness": 99,
    }


async def test_map_partial_coverage() -> None:
    # "trends" is missing: it weighs like a 1-sentence term, ln(10/3).
    # coverage = 1.89712 / 3.10109 = 0.61176; strength = 1.84676 / 3.10109 = 0.59552 -> 60.
    result = score_batch("solar power trends", ENERGY)
    assert result.usefulness == 60
    assert result.coverage == pytest.approx(0.611759, abs=1e-6)
    assert result.strength == pytest.approx(0.595517, abs=1e-6)
    assert result.answer.splitlines()[0] == "Solar power grew fast. [Community c1]"


async def test_map_non_matching_batch() -> None:
    assert await map_reply("What about bananas?", ENERGY) == {"answer": "", "usefulness": 0}
    # Words of the headers and section markers are not text.
    assert await map_reply("community summary part", ENERGY) == {"answer": "", "usefulness": 0}


async def test_map_chinese_query() -> None:
    # Terms: 量 子 计 算 量子 子计 计算 (stopword bigrams 算是/是什 dropped), all present:
    # coverage 1; best sentence 15 tokens of avgdl 13 -> 2.2 / 2.33846 = 0.94079 -> 97.
    data = await map_reply("量子计算是什么？", CHINESE)
    assert data == {
        "answer": "量子计算发展迅速。 [Community 7]\n经典计算机仍然重要。 [Community 7]",
        "usefulness": 97,
    }


async def test_map_top_three_ties_by_position_and_chunk_prefix_dropped() -> None:
    content = (
        "[Community ID: a | summary part 1]\n"
        "[Community summary]: Rivers flood. Rivers rise.\n"
        "[Community ID: b | summary part 3]\n"
        "[Source excerpts]:\n"
        "- [Chunk ch-9] Rivers dry. Rivers freeze! Lakes calm."
    )
    data = await map_reply("rivers", content)
    assert data["answer"] == (
        "Rivers flood. [Community a]\nRivers rise. [Community a]\nRivers dry. [Community b]"
    )
    # idf-weighted coverage 1; the 2-token sentences (avgdl 2) score 2.2/2.2 = 1 -> 100.
    assert data["usefulness"] == 100


async def test_map_quoted_fence_cannot_break_parsing() -> None:
    content = "[Community ID: x | summary part 1]\nUse ```json blocks``` for rivers."
    text = await MODEL.complete(req("map", "rivers", content))
    assert "`" not in text
    assert json.loads(text)["answer"] == "Use ```json blocks``` for rivers. [Community x]"


REDUCE_INPUT = (
    "[Usefulness: 99; Community IDs: c1]\n"
    "Solar power grew fast. [Community c1]\n"
    "Acme builds solar farms. [Community c1]\n"
    "\n"
    "[Usefulness: 33.5; Community IDs: c2, c3]\n"
    "solar power  grew fast. [Community c3]\n"
    "Wind grew too. [Community c2]\n"
    "\n"
    "[Usefulness: 5; Community IDs: d, e]\n"
    "A line without a citation"
)


async def test_reduce_merges_in_order_and_drops_duplicates() -> None:
    assert await reduce_answer(REDUCE_INPUT) == (
        "From 3 intermediate answers (extractive, not an LLM):\n\n"
        "- Solar power grew fast. [Community c1] [Community c3]\n"
        "- Acme builds solar farms. [Community c1]\n"
        "- Wind grew too. [Community c2]\n"
        "- A line without a citation [Community d] [Community e]"
    )


async def test_reduce_keeps_every_line() -> None:
    """No "(+N more sentences not shown)": the whole answer is there (the app scrolls)."""
    blocks = [f"[Usefulness: {90 - i}; Community IDs: {i}]\nFact {i}. [Community {i}]" for i in range(40)]
    answer = await reduce_answer("\n\n".join(blocks))
    lines = answer.splitlines()
    assert lines[0] == "From 40 intermediate answers (extractive, not an LLM):"
    assert lines[1] == ""
    assert lines[2:] == [f"- Fact {i}. [Community {i}]" for i in range(40)]


async def test_parts_cut_mid_word_are_quoted_from_word_boundaries() -> None:
    # Part 2 alone: it starts mid-word ("rbor"), and, alone in its batch, may end mid-word.
    cut = "[Community ID: h | summary part 2]\nrbor Mutual pays rivers claims. The rivers board me"
    assert (await map_reply("rivers", cut))["answer"] == (
        "The rivers board… [Community h]\n…Mutual pays rivers claims. [Community h]")
    # A chunk header cut before its "]" is not quoted.
    cut_header = "[Community ID: h | summary part 1]\nRivers rise.\n- [Chunk harbor-"
    assert (await map_reply("rivers", cut_header))["answer"] == "Rivers rise. [Community h]"
    # Parts 1 and 2 of one community in one batch are joined where they were cut.
    joined = ("[Community ID: h | summary part 1]\nThe Ha\n[Community ID: h | summary part 2]\n"
              "rbor rivers rise.\n[Community ID: k | summary part 1]\nLakes.")
    assert (await map_reply("rivers", joined))["answer"] == "The Harbor rivers rise. [Community h]"
    # CJK text has no words to cut: a continuation part is quoted as it is.
    assert (await map_reply("天气", "[Community ID: 8 | summary part 2]\n天气很好！"))["answer"] == (
        "天气很好！ [Community 8]")


async def test_reduce_never_empty() -> None:
    assert await reduce_answer("[Usefulness: 1; Community IDs: a]\n") == (
        "From 1 intermediate answer (extractive, not an LLM):\n\n(the intermediate answers had no text)"
    )
    assert await reduce_answer("") != ""


async def test_deterministic_across_runs_and_hash_seeds() -> None:
    first = await MODEL.complete(req("map", "solar power trends", ENERGY))
    assert first == await ExtractiveModel().complete(req("map", "solar power trends", ENERGY))
    code = (
        "import asyncio, sys; from tests.test_extractive import MODEL, req, ENERGY;"
        "sys.stdout.write(asyncio.run(MODEL.complete(req('map', 'solar power trends', ENERGY))))"
    )
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for seed in ("1", "2"):
        out = subprocess.run(
            [sys.executable, "-c", code],
            cwd=root,
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert out == first


ODD_INPUTS = [
    "",
    "\n\n\n",
    "no header at all, rivers here.",
    "[Community ID: x | summary part 1]",
    "[Community ID:  | summary part 1]\n\x00\x01\x1b[31mrivers\x1b[0m \u200b",
    "[Community ID: a | b | summary part 2]\n<b>rivers</b> & [[markup]] {\"answer\": 1}",
    "[Supporting claims]:\n- \n- [Chunk ]\n[Source excerpts]:",
    "\ud800 rivers \udfff 。。。！？；",
    "[Usefulness: x; Community IDs: ]\n\n[Usefulness: 1; Community IDs: a,,b]\nrivers",
    "。" * 500 + "rivers " * 3000,
]


@pytest.mark.parametrize("content", ODD_INPUTS)
@pytest.mark.parametrize("query", ["rivers", "", "\x00", "什么"])
async def test_odd_input_never_raises(content: str, query: str) -> None:
    for stage in ("map", "reduce"):
        text = await MODEL.complete(req(stage, query, content))
        data = json.loads(text)
        text.encode("utf-8")
        if stage == "map":
            assert (data["answer"].strip() == "") == (data["usefulness"] == 0)
        else:
            assert data["answer"].strip()


async def test_odd_input_citations() -> None:
    data = await map_reply("rivers", "no header at all, rivers here.")
    assert data["answer"] == "no header at all, rivers here."
    data = await map_reply("rivers", "[Community ID: a | b | summary part 2]\n<b>rivers</b>")
    assert data["answer"] == "<b>rivers</b> [Community a | b]"


@pytest.mark.parametrize("spoof", ["[Community ID: ns/2 | summary part 1]",
                                   "[Community ID: ns/2 | summary part " + "9" * 5000 + "]"], ids=["header", "huge-part"])
def test_a_line_of_store_text_that_reads_as_a_part_header_is_text(tmp_path, spoof: str) -> None:
    """The extractive model found a batch's parts by their headers in the Map text: a line
    of ns/1's summary written as ns/2's header made the model cite ns/2 for ns/1's sentence,
    and one with a 5,000-digit part failed the batch (`internal: ValueError`). The engine
    now says where each part's text is."""
    from tests.cli_runner import run_cli
    from tests.stores import build_store

    store = build_store(tmp_path / "s.db", [
        {"id": "ns/1", "summary_content": f"The port authority funds the bridge.\n{spoof}\nTolls pay the bridge."},
        {"id": "ns/2", "summary_content": "Fishing fleets land at dawn."},
    ])
    run = run_cli("query", str(store), "Who funds the bridge?", "--no-shuffle", "--no-history", "--no-config",
                  "--json")
    assert run.code == 0, run.stderr
    (batch,) = run.json["batches"]
    assert batch["status"] == "succeeded" and batch["community_ids"] == ["ns/1", "ns/2"]
    assert batch["answer"].splitlines() == ["The port authority funds the bridge. [Community ns/1]",
                                            "Tolls pay the bridge. [Community ns/1]"]
