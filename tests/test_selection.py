"""Community selection (issue 15): `--select level|rollup|dynamic` and `--min-rank`, run by
the real CLI against the scripted chat-completions server on 127.0.0.1.

The rating server rates by a rule: 3 when the community's text names Marley, else 0."""

from __future__ import annotations

import hashlib
import json
import select
import signal
import sqlite3
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from graphrag_tui.engine.selection import SelectionNode, majority, rollup
from graphrag_tui.importer import import_graphrag
from tests.chat_server import Received, Reply, ScriptedChatServer, completion, map_reply, reduce_reply
from tests.cli_runner import EXECUTABLE, clean_env, run_cli
from tests.stores import build_store
from tests.test_history_e2e import only_run, rows, wait_for

CAROL = Path("/work/shared/graphrag-sample-data/msgraphrag-v3-christmas-carol")
QUESTION = "Who haunts the counting house?"
MARKER = "Marley"
ROLLUP_AT_LEAF = "rollup selection needs a level number, not 'leaf': --level sets the deepest level it rolls up to"


def text(words: str) -> str:
    return f"{words} The ledger of the counting house is kept in ink."


def walk_store(path: Path) -> Path:
    """   a (Marley) -> a1 (Marley) -> a1x (Marley), a1y
                     -> a2
          b          -> b1 (Marley)"""
    return build_store(path, [
        {"id": "ns/a", "level": 0, "summary_content": text("Marley's partner runs the firm.")},
        {"id": "ns/b", "level": 0, "summary_content": text("The baker sells bread.")},
        {"id": "ns/a1", "level": 1, "parent_community_id": "ns/a", "summary_content": text("Marley is dead.")},
        {"id": "ns/a2", "level": 1, "parent_community_id": "ns/a", "summary_content": text("Fog fills the street.")},
        {"id": "ns/b1", "level": 1, "parent_community_id": "ns/b", "summary_content": text("Marley's ghost walks.")},
        {"id": "ns/a1x", "level": 2, "parent_community_id": "ns/a1", "summary_content": text("Marley's chains.")},
        {"id": "ns/a1y", "level": 2, "parent_community_id": "ns/a1", "summary_content": text("A door knocker.")},
    ])


#: What each call reports it used with `RatingServer(paid=True)`, by stage.
PAID = {"rate": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11},
        "map": {"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105},
        "reduce": {"prompt_tokens": 1000, "completion_tokens": 20, "total_tokens": 1020}}


class RatingServer:
    """Rates by the rule (or by `votes`: a community's replies in order, served call by call);
    Map and Reduce answer plainly. Counts the rating calls per community text. With `paid`,
    each reply reports the usage PAID gives its stage."""

    def __init__(self, votes: dict[str, list[Reply]] | None = None, *, paid: bool = False) -> None:
        self.votes = votes or {}
        self.calls: dict[str, int] = {}
        self.lock = threading.Lock()
        self.paid = paid

    def __call__(self, request: Received) -> Reply:
        reply = self._reply(request)
        if self.paid and isinstance(reply.body, dict):
            return Reply({**reply.body, "usage": PAID[request.stage]}, gate=reply.gate)
        return reply

    def _reply(self, request: Received) -> Reply:
        if request.stage == "reduce":
            return reduce_reply("Marley's ghost.")
        if request.stage == "map":
            return map_reply("Marley haunts it.", 50)
        rated = request.rated_text
        with self.lock:
            n = self.calls.get(rated, 0)
            self.calls[rated] = n + 1
        for key, replies in self.votes.items():
            if key in rated:
                return replies[min(n, len(replies) - 1)]
        return rating(3 if MARKER in rated else 0)


def rating(value: Any, reason: str = "by the rule") -> Reply:
    return Reply(completion(json.dumps({"reason": reason, "rating": value})))


def query(store: Path, server: ScriptedChatServer, tmp_path: Path, *flags: str) -> tuple[dict[str, Any], list[dict]]:
    events = tmp_path / "events.jsonl"
    run = run_cli("query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m", "--no-config",
                  "--no-history", "--concurrency", "1", "--events", str(events), "--json", *flags)
    assert run.code == 0, run.stderr
    lines = [json.loads(line) for line in events.read_text(encoding="utf-8").splitlines()]
    return run.json, lines


def rated(result: dict[str, Any]) -> dict[str, tuple[int, list[int]]]:
    return {r["community_id"]: (r["rating"], r["votes"]) for r in result["selection"]["ratings"]}


def mapped(result: dict[str, Any]) -> list[str]:
    return sorted(c for b in result["batches"] for c in b["community_ids"])


def test_dynamic_selection_keeps_exactly_the_rated_set_drops_parents_and_rates_children(tmp_path: Path) -> None:
    store = walk_store(tmp_path / "walk.db")
    with ScriptedChatServer(RatingServer()) as server:
        result, events = query(store, server, tmp_path, "--select", "dynamic")
        stages = [r.stage for r in server.chat_requests()]
    assert result["status"] == "completed"
    assert result["selection"]["mode"] == "dynamic"
    # a kept -> its children rated; a1 kept -> its children rated; b not kept -> b1 never rated
    assert rated(result) == {
        "ns/a": (3, [3]), "ns/b": (0, [0]), "ns/a1": (3, [3]), "ns/a2": (0, [0]), "ns/a1x": (3, [3]), "ns/a1y": (0, [0]),
    }
    assert [r["level"] for r in result["selection"]["ratings"]] == [0, 0, 1, 1, 2, 2]
    assert result["selection"]["ratings"][0]["reason"] == "by the rule"
    # parents leave the selection once a child is kept
    assert result["selection"]["selected"] == ["ns/a1x"]
    assert mapped(result) == ["ns/a1x"]
    assert result["level"] == 0
    assert stages == ["rate"] * 6 + ["map", "reduce"]
    rated_events = [e for e in events if e["type"] == "community_rated"]
    assert [(e["community_id"], e["rating"], e["kept"], e["votes"]) for e in rated_events] == [
        ("ns/a", 3, True, [3]), ("ns/b", 0, False, [0]), ("ns/a1", 3, True, [3]), ("ns/a2", 0, False, [0]),
        ("ns/a1x", 3, True, [3]), ("ns/a1y", 0, False, [0]),
    ]
    finished = [e for e in events if e["type"] == "selection_finished"]
    assert [(e["rated_count"], e["selected_count"]) for e in finished] == [(6, 1)]
    # the Planned event follows the selection: it counts the selected communities' batches
    planned = [e for e in events if e["type"] == "planned"]
    assert [(e["summary_count"], e["batch_count"]) for e in planned] == [(1, 1)]


def test_keep_parent_and_a_higher_threshold(tmp_path: Path) -> None:
    store = walk_store(tmp_path / "walk.db")
    with ScriptedChatServer(RatingServer()) as server:
        kept, _ = query(store, server, tmp_path, "--select", "dynamic", "--keep-parent")
    assert kept["selection"]["selected"] == ["ns/a", "ns/a1", "ns/a1x"]
    assert mapped(kept) == ["ns/a", "ns/a1", "ns/a1x"]
    with ScriptedChatServer(RatingServer()) as server:
        none, _ = query(store, server, tmp_path, "--select", "dynamic", "--rate-threshold", "4")
    assert none["status"] == "no_results"
    assert none["detail"] == "dynamic selection chose no community: no community rated at or above --rate-threshold 4"
    # nothing kept at level 0: level 1 is rated whole, then level 2 (max level 2): 7 ratings
    assert sorted(rated(none)) == ["ns/a", "ns/a1", "ns/a1x", "ns/a1y", "ns/a2", "ns/b", "ns/b1"]
    assert none["batches"] == []


def test_the_next_level_is_rated_whole_when_a_level_keeps_nothing(tmp_path: Path) -> None:
    store = build_store(tmp_path / "deep.db", [
        {"id": "ns/p", "level": 0, "summary_content": text("The baker.")},
        {"id": "ns/q", "level": 0, "summary_content": text("The grocer.")},
        {"id": "ns/p1", "level": 1, "parent_community_id": "ns/p", "summary_content": text("Marley's door.")},
        {"id": "ns/q1", "level": 1, "parent_community_id": "ns/q", "summary_content": text("The poulterer.")},
        {"id": "ns/p1a", "level": 2, "parent_community_id": "ns/p1", "summary_content": text("A bell.")},
    ])
    with ScriptedChatServer(RatingServer()) as server:
        result, _ = query(store, server, tmp_path, "--select", "dynamic")
    assert rated(result) == {"ns/p": (0, [0]), "ns/q": (0, [0]), "ns/p1": (3, [3]), "ns/q1": (0, [0]),
                             "ns/p1a": (0, [0])}
    assert result["selection"]["selected"] == ["ns/p1"]
    # --max-level 0 stops that step: level 1 is never rated as a whole
    with ScriptedChatServer(RatingServer()) as server:
        stopped, _ = query(store, server, tmp_path, "--select", "dynamic", "--max-level", "0")
    assert rated(stopped) == {"ns/p": (0, [0]), "ns/q": (0, [0])}
    assert stopped["status"] == "no_results"


def test_majority_vote_ties_take_the_lowest_rating(tmp_path: Path) -> None:
    store = walk_store(tmp_path / "walk.db")
    votes = {
        "Marley's partner": [rating(3), rating(0), rating(3)],  # a: 3 by 2 to 1
        "The baker": [rating(4), rating(2), rating(2)],  # b: 2 by 2 to 1
    }
    with ScriptedChatServer(RatingServer(votes)) as server:
        result, _ = query(store, server, tmp_path, "--select", "dynamic", "--rate-repeats", "3")
    ratings = rated(result)
    assert ratings["ns/a"] == (3, [3, 0, 3])
    assert ratings["ns/b"] == (2, [4, 2, 2])
    assert ratings["ns/b1"] == (3, [3, 3, 3])  # b kept (2 >= 1): its child rated
    tie = {"Marley's partner": [rating(5), rating(1)], "The baker": [rating(0)]}
    with ScriptedChatServer(RatingServer(tie)) as server:
        result, _ = query(store, server, tmp_path, "--select", "dynamic", "--rate-repeats", "2",
                          "--rate-threshold", "2")
    assert rated(result)["ns/a"] == (1, [5, 1])  # a tie: the lowest tied rating, below the threshold
    assert majority([2, 4, 4, 2, 0]) == 2
    assert majority([5]) == 5


def test_an_unparseable_rating_is_retried_once_then_counts_as_1(tmp_path: Path) -> None:
    store = walk_store(tmp_path / "walk.db")
    votes = {
        "The baker": [Reply(completion("I would say it is relevant")), Reply(completion('{"rating": "high"}'))],
        "Marley's partner": [Reply(completion("not json")), rating(4, "names Marley")],  # the retry answers
    }
    with ScriptedChatServer(RatingServer(votes)) as server:
        result, events = query(store, server, tmp_path, "--select", "dynamic", "--rate-threshold", "1")
        rates = [r for r in server.chat_requests() if r.stage == "rate"]
    ratings = {r["community_id"]: r for r in result["selection"]["ratings"]}
    assert (ratings["ns/a"]["rating"], ratings["ns/a"]["reason"], ratings["ns/a"]["failed"]) == (4, "names Marley", 0)
    baker = ratings["ns/b"]
    assert (baker["rating"], baker["votes"], baker["failed"], baker["kept"]) == (1, [1], 1, True)
    assert baker["reason"].startswith("no usable rating (`rating` must be an integer within 0..5, got \"high\")")
    assert baker["reason"].endswith(": counted as 1")
    assert sum("The baker" in r.rated_text for r in rates) == 2  # retried once
    failures = [e for e in events if e["type"] == "attempt_failed"]
    assert [(e["community_id"], e["error_kind"], e["will_retry"]) for e in failures] == [
        ("ns/a", "invalid_json", True), ("ns/b", "invalid_json", True), ("ns/b", "invalid_fields", False),
    ]
    assert all(e["batch_index"] is None for e in failures)
    # b, counted as 1, is kept (threshold 1): its child b1 is rated and kept
    assert result["selection"]["selected"] == ["ns/a1x", "ns/b1"]
    # the text output says how many had no usable rating (every one could have, unsaid)
    again = {"The baker": [Reply(completion("no")), Reply(completion("no"))], "Marley's partner": [rating(4, "Marley")]}
    with ScriptedChatServer(RatingServer(again)) as server:
        text = run_cli("query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m", "--no-config",
                       "--no-history", "--concurrency", "1", "--select", "dynamic", "--rate-threshold", "1")
    assert text.code == 0, text.stderr
    assert "\nselection: dynamic, 7 rated (1 with no usable rating, counted as 1), 2 communities selected\n" in text.stdout


def test_a_store_without_level_0_and_numeric_looking_ids(tmp_path: Path) -> None:
    """GraphRAG's #2382 (no level 0 crashed it) and #2004 (int and string ids mixed up)."""
    store = build_store(tmp_path / "nolevel0.db", [
        {"id": "1", "level": 1, "summary_content": text("Marley's counting house.")},
        {"id": "2", "level": 1, "summary_content": text("The baker.")},
        {"id": "10", "level": 2, "parent_community_id": "1", "summary_content": text("Marley's ghost.")},
        {"id": "9", "level": 2, "parent_community_id": "1", "summary_content": text("A bell.")},
    ])
    with ScriptedChatServer(RatingServer()) as server:
        result, _ = query(store, server, tmp_path, "--select", "dynamic")
    assert result["level"] == 1
    assert rated(result) == {"1": (3, [3]), "2": (0, [0]), "10": (3, [3]), "9": (0, [0])}
    assert result["selection"]["selected"] == ["10"]
    assert mapped(result) == ["10"]


def test_min_rank_keeps_the_ranked_communities_in_every_mode(tmp_path: Path) -> None:
    store = rollup_store(tmp_path / "r.db")
    with ScriptedChatServer(RatingServer()) as server:
        result, _ = query(store, server, tmp_path, "--select", "dynamic", "--min-rank", "6.5")
        level, _ = query(store, server, tmp_path, "--level", "1", "--min-rank", "6.5")
    # dynamic kept R1a (Marley) and R1b (Marley); R1a's rank is 7, R1b's 6
    assert result["selection"]["selected"] == ["ns/R1a"]
    assert level["selection"] == {"mode": "level", "ratings": [], "selected": ["ns/R1a"]}
    assert mapped(level) == ["ns/R1a"]


def rollup_store(path: Path, *, with_d: bool = True) -> Path:
    """R1 [A B C D] -> R1a [A B] -> R1a1 [A]; R1 -> R1b [C]; R2 [E] (levels 0, 1, 2)."""
    members = ["A", "B", "C", "D"] if with_d else ["A", "B", "C"]
    return build_store(path, [
        {"id": "ns/R1", "level": 0, "members": json.dumps(members), "rank": 9.0, "summary_content": text("Wexley.")},
        {"id": "ns/R2", "level": 0, "members": json.dumps(["E"]), "rank": 2.0, "summary_content": text("Fred.")},
        {"id": "ns/R1a", "level": 1, "parent_community_id": "ns/R1", "members": json.dumps(["A", "B"]), "rank": 7.0,
         "summary_content": text("Marley's chains.")},
        {"id": "ns/R1b", "level": 1, "parent_community_id": "ns/R1", "members": json.dumps(["C"]), "rank": 6.0,
         "summary_content": text("Marley's door.")},
        {"id": "ns/R1a1", "level": 2, "parent_community_id": "ns/R1a", "members": json.dumps(["A"]), "rank": 1.0,
         "summary_content": text("A bell.")},
    ])


def plan_ids(store: Path, *flags: str) -> list[str]:
    run = run_cli("plan", str(store), QUESTION, "--no-config", "--json", *flags)
    assert run.code == 0, run.stderr
    assert run.json["selection"]["mode"] == "rollup"
    return sorted(c for b in run.json["batches"] for c in b["community_ids"])


def test_rollup_on_small_stores_with_known_answers(tmp_path: Path) -> None:
    store = rollup_store(tmp_path / "r.db")
    assert plan_ids(store, "--select", "rollup", "--level", "0") == ["ns/R1", "ns/R2"]
    # D sits in R1 only, so R1 stays beside its children
    assert plan_ids(store, "--select", "rollup", "--level", "1") == ["ns/R1", "ns/R1a", "ns/R1b", "ns/R2"]
    assert plan_ids(store, "--select", "rollup", "--level", "2") == ["ns/R1", "ns/R1a", "ns/R1a1", "ns/R1b", "ns/R2"]
    assert plan_ids(store, "--select", "rollup", "--level", "1", "--min-rank", "6.5") == ["ns/R1", "ns/R1a"]
    # without D every entity of R1 sits deeper: the parent drops out
    lean = rollup_store(tmp_path / "lean.db", with_d=False)
    assert plan_ids(lean, "--select", "rollup", "--level", "1") == ["ns/R1a", "ns/R1b", "ns/R2"]
    assert plan_ids(lean, "--select", "rollup", "--level", "2") == ["ns/R1a", "ns/R1a1", "ns/R1b", "ns/R2"]


def test_rollup_the_pure_rule() -> None:
    nodes = [SelectionNode("x", 0, None, "", ("A", "B"), None), SelectionNode("y", 1, "x", "", ("A",), None),
             SelectionNode("z", 1, "x", "", ("A",), None)]
    assert rollup(nodes, 0) == ["x"]
    assert rollup(nodes, 1) == ["x", "y"]  # A's deepest: y and z tie, the lower id; B stays in x


def test_rollup_and_selection_input_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from graphrag_tui.cli import main

    store = walk_store(tmp_path / "walk.db")  # no members, no rank
    cases = [
        (("--select", "rollup", "--level", "1"),
         "rollup selection gives each entity to the deepest community whose members name it, and no community of "
         "namespace 'ns' lists members (its members column is empty)"),
        (("--select", "rollup"), ROLLUP_AT_LEAF),
        (("--select", "rollup", "--level", "leaf"), ROLLUP_AT_LEAF),
        (("--select", "dynamic"), "plan cannot show --select dynamic's batches: they depend on the model's ratings "
                                  "(plan --select level or rollup, or run query)"),
        (("--min-rank", "3"), "--min-rank needs each community's rank, and namespace 'ns' has none (import the "
                              "GraphRAG output again with this version to keep each report's rank)"),
        (("--select", "everything"), "--select must be one of level, rollup, dynamic, got 'everything'"),
        (("--min-rank", "nan"), "--min-rank must be a number, got 'nan'"),
        (("--select", "dynamic", "--rate-repeats", "0"), "--rate-repeats must be an integer from 1 to 25, got '0'"),
        (("--select", "dynamic", "--rate-threshold", "6"), "--rate-threshold must be an integer from 0 to 5, got '6'"),
        (("--rate-repeats", "3"), "--rate-repeats applies to --select dynamic only (the mode is level)"),
    ]
    for flags, message in cases:  # (the command in this process: a process each took 8 s in all)
        code = main(["plan", str(store), QUESTION, "--no-config", *flags])
        assert (code, *capsys.readouterr()) == (2, "", f"graphrag-tui: error: {message}\n"), flags
    run = run_cli("query", str(store), QUESTION, "--no-config", "--no-history", "--select", "dynamic", "--level", "1")
    assert (run.code, run.stdout, run.stderr) == (2, "", "graphrag-tui: error: --level does not apply to --select "
                                                  "dynamic: it rates from the shallowest level down (--max-level bounds "
                                                  "how deep it rates a whole level)\n")
    # a budget whose rating prompt cannot carry one character of a community: every rating
    # call was paid for with the community's text cut to nothing
    with ScriptedChatServer(RatingServer()) as server:
        run = run_cli("query", str(store), QUESTION, "--no-config", "--no-history", "--select", "dynamic",
                      "--base-url", server.base_url, "--model", "m", "--map-budget", "150", "--map-reserve", "0")
        assert server.chat_requests() == []
    assert (run.code, run.stdout, run.stderr) == (
        2, "", "graphrag-tui: error: the map prompt budget (150 tokens) cannot fit dynamic selection's rating prompt "
               "with even one character of a community (156 tokens without one): raise --map-budget\n")


def test_selection_from_the_config_file_and_the_environment(tmp_path: Path) -> None:
    store = rollup_store(tmp_path / "r.db")
    config = tmp_path / "config.toml"
    config.write_text('[selection]\nselect = "rollup"\nmin_rank = 6.5\n', encoding="utf-8")
    run = run_cli("plan", str(store), QUESTION, "--config", str(config), "--level", "1", "--json")
    assert run.code == 0, run.stderr
    assert run.json["selection"]["selected"] == ["ns/R1", "ns/R1a"]
    config.write_text('[selection]\nrate_repeats = 0\n', encoding="utf-8")
    run = run_cli("plan", str(store), QUESTION, "--config", str(config))
    assert (run.code, run.stderr) == (
        2, f"graphrag-tui: error: config file {config}: [selection] rate_repeats must be an integer from 1 to 25, "
           "got 0\n")


@pytest.mark.skipif(not CAROL.is_dir(), reason="the shared Christmas Carol GraphRAG output is absent")
def test_rollup_counts_on_the_christmas_carol(tmp_path: Path) -> None:
    store = tmp_path / "carol.db"
    import_graphrag(CAROL, store, "carol")
    counts = []
    for level in range(4):
        run = run_cli("plan", str(store), QUESTION, "--no-config", "--json", "--select", "rollup", "--level", str(level))
        assert run.code == 0, run.stderr
        assert run.json["summary_count"] == len(run.json["selection"]["selected"])
        counts.append(run.json["summary_count"])
    assert counts == [23, 76, 97, 98]


def test_the_run_history_keeps_the_selection(tmp_path: Path) -> None:
    store = walk_store(tmp_path / "walk.db")
    history = tmp_path / "history.db"
    with ScriptedChatServer(RatingServer()) as server:
        run = run_cli("query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m", "--no-config",
                      "--history", str(history), "--select", "dynamic")
    assert run.code == 0, run.stderr
    assert "selection: dynamic, 6 rated, 1 community selected\n" in run.stdout
    run_id = run.stdout.strip().splitlines()[-1].removeprefix("run ")
    shown = run_cli("runs", "show", run_id, "--history", str(history), "--no-config", "--json")
    assert shown.code == 0, shown.stderr
    selection = shown.json["selection"]
    assert (selection["mode"], selection["selected"]) == ("dynamic", ["ns/a1x"])
    assert [(r["community_id"], r["rating"], r["votes"]) for r in selection["ratings"]] == [
        ("ns/a", 3, [3]), ("ns/b", 0, [0]), ("ns/a1", 3, [3]), ("ns/a2", 0, [0]), ("ns/a1x", 3, [3]), ("ns/a1y", 0, [0]),
    ]
    assert [b["community_ids"] for b in shown.json["batches"]] == [["ns/a1x"]]
    exported = run_cli("runs", "export", run_id, str(tmp_path / "report"), "--history", str(history), "--no-config")
    assert exported.code == 0, exported.stderr
    markdown = (tmp_path / "report.md").read_text(encoding="utf-8")
    section = markdown.split("## Selection\n\n", 1)[1].split("\n\n", 1)[0]
    assert section.splitlines() == [
        "- Mode: dynamic",
        "- Selected (1): ns/a1x",
        "- ns/a (level 0): rating 3 (votes 3), kept: by the rule",
        "- ns/b (level 0): rating 0 (votes 0), not kept: by the rule",
        "- ns/a1 (level 1): rating 3 (votes 3), kept: by the rule",
        "- ns/a2 (level 1): rating 0 (votes 0), not kept: by the rule",
        "- ns/a1x (level 2): rating 3 (votes 3), kept: by the rule",
        "- ns/a1y (level 2): rating 0 (votes 0), not kept: by the rule",
    ]
    assert json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))["selection"]["selected"] == ["ns/a1x"]
    # a re-run sends the recorded selection's batches again: no community is rated again
    with ScriptedChatServer(RatingServer()) as server:
        again = run_cli("rerun", run_id, "--all", "--base-url", server.base_url, "--model", "m", "--no-config",
                        "--history", str(history), "--json")
        stages = [r.stage for r in server.chat_requests()]
    assert again.code == 0, again.stderr
    assert stages == ["map", "reduce"]
    assert [b["community_ids"] for b in again.json["batches"]] == [["ns/a1x"]]
    assert again.json["selection"] == selection


WALK_RATINGS = [("ns/a", 3, [3]), ("ns/b", 0, [0]), ("ns/a1", 3, [3]), ("ns/a2", 0, [0]), ("ns/a1x", 3, [3]),
                ("ns/a1y", 0, [0])]


class HeldServer(RatingServer):
    """RatingServer, but the calls `held` picks wait for `release`."""

    def __init__(self, held: Callable[[Received], bool], votes: dict[str, list[Reply]] | None = None, *,
                 paid: bool = False) -> None:
        super().__init__(votes, paid=paid)
        self.held, self.release = held, threading.Event()

    def _reply(self, request: Received) -> Reply:
        if self.held(request):
            return Reply(completion(json.dumps({"answer": "late", "usefulness": 5})), gate=self.release)
        return super()._reply(request)


def killed_run(store: Path, history: Path, held: Callable[[Received], bool], ready: Callable[[], bool], *flags: str,
               signal_number: int = signal.SIGKILL, votes: dict[str, list[Reply]] | None = None,
               paid: bool = False) -> tuple[str, Any]:
    """A query stopped by `signal_number` once `ready()` (its held calls in flight); its run
    id, and the server's requests."""
    script = HeldServer(held, votes, paid=paid)
    with ScriptedChatServer(script) as server:
        process = subprocess.Popen(
            [EXECUTABLE, "query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m", "--no-config",
             "--history", str(history), "--concurrency", "1", "--seed", "3", "--json", *flags],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env(), stdin=subprocess.DEVNULL)
        try:
            wait_for(lambda: any(map(script.held, server.chat_requests())))
            wait_for(ready, timeout=5)
            process.send_signal(signal_number)
            process.communicate(timeout=20)
        finally:
            script.release.set()
            if process.poll() is None:
                process.kill()
        requests = server.chat_requests()
    run_id = only_run(history)
    assert run_id is not None
    return run_id, requests


def recorded_ratings(history: Path) -> list[str]:
    """The community ids of the ratings a run's selection has committed so far."""
    found = rows(history, "SELECT selection FROM runs")
    if not found or found[0][0] is None:
        return []
    return [r["community_id"] for r in json.loads(found[0][0]).get("ratings", [])]


def recorded_votes(history: Path) -> dict[str, list[int | None]]:
    """The ratings of the votes a run's selection has committed for communities not yet rated."""
    found = rows(history, "SELECT selection FROM runs")
    if not found or found[0][0] is None:
        return {}
    votes = json.loads(found[0][0]).get("votes", {})
    return {cid: [None if v is None else v["rating"] for v in cast] for cid, cast in votes.items()}


def resumed(history: Path, run_id: str, *, paid: bool = False) -> tuple[Any, list[Received]]:
    with ScriptedChatServer(RatingServer(paid=paid)) as server:
        run = run_cli("resume", run_id, "--history", str(history), "--base-url", server.base_url, "--json")
        requests = server.chat_requests()
    assert run.code == 0, run.stderr
    shown = run_cli("runs", "show", run_id, "--history", str(history), "--json")
    assert (shown.code, shown.stderr) == (0, "")
    assert shown.json == run.json
    return run.json, requests


@pytest.mark.parametrize("stop", ["kill", "interrupt"])
def test_a_dynamic_run_stopped_while_the_model_rates_resumes_rating_only_what_it_had_not(
        tmp_path: Path, stop: str) -> None:
    store, history = walk_store(tmp_path / "walk.db"), tmp_path / "history.db"
    fog = "Fog fills the street."  # ns/a2, the second community of the second wave
    run_id, requests = killed_run(
        store, history, lambda r: r.stage == "rate" and fog in r.rated_text,
        lambda: recorded_ratings(history) == ["ns/a", "ns/b", "ns/a1"], "--select", "dynamic",
        signal_number=signal.SIGKILL if stop == "kill" else signal.SIGINT)
    assert [r.stage for r in requests] == ["rate"] * 4  # a, b, a1 rated; a2 in flight; nothing else sent
    (listed,) = run_cli("runs", "list", "--history", str(history), "--json").json["runs"]
    status = "interrupted" if stop == "kill" else "cancelled"
    assert (listed["run_id"], listed["status"], listed["batch_count"], listed["question"]) == (
        run_id, status, 0, QUESTION)
    # its ratings so far, also after a kill (it showed `selection: null` then)
    shown = run_cli("runs", "show", run_id, "--history", str(history), "--json").json["selection"]
    assert (shown["mode"], [r["community_id"] for r in shown["ratings"]], shown["selected"]) == (
        "dynamic", ["ns/a", "ns/b", "ns/a1"], [])
    result, sent = resumed(history, run_id)
    # the three rated before are not asked again; a2 and the children of a1 are
    assert [(r.stage, r.rated_text.split(" The ledger")[0] if r.stage == "rate" else "") for r in sent] == [
        ("rate", fog), ("rate", "Marley's chains."), ("rate", "A door knocker."),
        ("map", ""), ("reduce", "")]
    assert (result["run_id"], result["status"], result["answer"]) == (run_id, "completed", "Marley's ghost.")
    assert [(r["community_id"], r["rating"], r["votes"]) for r in result["selection"]["ratings"]] == WALK_RATINGS
    assert result["selection"]["selected"] == ["ns/a1x"] and mapped(result) == ["ns/a1x"]
    assert sha256_of(store) == sha256_of(walk_store(tmp_path / "again.db"))  # the store untouched


def test_a_run_stopped_between_the_votes_of_a_rating_resumes_asking_only_the_votes_not_cast(tmp_path: Path) -> None:
    """With --rate-repeats 3, each vote is recorded as it comes: killed while a community has
    one of its three votes, the resume asks it twice, and its rating counts the vote cast before."""
    store, history = walk_store(tmp_path / "walk.db"), tmp_path / "history.db"
    fog = "Fog fills the street."  # ns/a2: its first vote is 4 here, the rule's 0 after the resume
    fog_arrivals: list[float] = []

    def second_fog_vote(request: Received) -> bool:
        if request.stage != "rate" or fog not in request.rated_text:
            return False
        if request.received_at not in fog_arrivals:
            fog_arrivals.append(request.received_at)
        return fog_arrivals.index(request.received_at) == 1

    run_id, requests = killed_run(
        store, history, second_fog_vote,
        lambda: recorded_ratings(history) == ["ns/a", "ns/b", "ns/a1"] and recorded_votes(history) == {
            "ns/a2": [4, None, None]},
        "--select", "dynamic", "--rate-repeats", "3", votes={fog: [rating(4, "a first look")]})
    assert [r.rated_text.split(" The ledger")[0] for r in requests] == [
        *["Marley's partner runs the firm."] * 3, *["The baker sells bread."] * 3, *["Marley is dead."] * 3, fog, fog]
    result, sent = resumed(history, run_id)
    assert [(r.stage, r.rated_text.split(" The ledger")[0] if r.stage == "rate" else "") for r in sent] == [
        ("rate", fog), ("rate", fog), *[("rate", "Marley's chains.")] * 3, *[("rate", "A door knocker.")] * 3,
        ("map", ""), ("reduce", "")]
    ratings = {r["community_id"]: (r["rating"], r["votes"], r["reason"]) for r in result["selection"]["ratings"]}
    assert ratings["ns/a2"] == (0, [4, 0, 0], "by the rule")
    assert [(c, r, v) for c, (r, v, _) in ratings.items()] == [
        (cid, rating_, votes * 3 if cid != "ns/a2" else [4, 0, 0]) for cid, rating_, votes in WALK_RATINGS]
    assert (result["status"], result["selection"]["selected"]) == ("completed", ["ns/a1x"])


@pytest.mark.parametrize(("flags", "selected"), [
    (("--select", "dynamic"), ["ns/a1x"]),
    (("--select", "rollup", "--level", "1"), ["ns/R1", "ns/R1a", "ns/R1b", "ns/R2"]),
])
def test_a_selection_run_killed_during_map_resumes_its_own_communities(
        tmp_path: Path, flags: tuple[str, ...], selected: list[str]) -> None:
    """An interrupted run has no result to read its selection from: the history keeps it
    (the chosen ids, a dynamic run's ratings), so the resume plans the same batches."""
    store = walk_store(tmp_path / "s.db") if "dynamic" in flags else rollup_store(tmp_path / "s.db")
    history = tmp_path / "history.db"
    run_id, requests = killed_run(store, history, lambda r: r.stage == "map",
                                  lambda: rows(history, "SELECT count(*) FROM run_plans") == [(1,)], *flags)
    rated_first = sum(r.stage == "rate" for r in requests)
    assert rated_first == (6 if "dynamic" in flags else 0)
    shown = run_cli("runs", "show", run_id, "--history", str(history), "--json").json
    assert shown["status"] == "interrupted" and shown["selection"]["selected"] == selected
    ratings = [(r["community_id"], r["rating"], r["votes"]) for r in shown["selection"]["ratings"]]
    assert ratings == (WALK_RATINGS if "dynamic" in flags else [])
    result, sent = resumed(history, run_id)
    assert [r.stage for r in sent] == ["map"] * result["batch_count"] + ["reduce"]  # nothing rated again
    assert (result["run_id"], result["status"]) == (run_id, "completed")
    assert result["selection"] == shown["selection"] and mapped(result) == sorted(selected)


@pytest.mark.parametrize(("stop", "rated_before"), [("kill", 3), ("interrupt", 3), ("kill during map", 6)])
def test_the_rating_calls_a_run_paid_for_count_in_its_usage_while_it_goes_and_across_a_resume(
        tmp_path: Path, stop: str, rated_before: int) -> None:
    """A rating call is paid for like a Map call: a run stopped while the model rates (or
    after, during Map) lists what its ratings reported so far, and its resume, which does
    not ask them again, counts them: its usage and its estimate are an uninterrupted run's."""
    store, history = walk_store(tmp_path / "walk.db"), tmp_path / "history.db"
    with ScriptedChatServer(RatingServer(paid=True)) as server:
        whole, events = query(store, server, tmp_path, "--select", "dynamic")
    estimates = [e["estimated_prompt_tokens"] for e in events if e["type"] == "usage"]
    assert [e.get("community_id") for e in events if e["type"] == "usage"] == [
        "ns/a", "ns/b", "ns/a1", "ns/a2", "ns/a1x", "ns/a1y", None, None]
    assert whole["usage_total"] == {"prompt_tokens": 1160, "completion_tokens": 31, "cached_tokens": 0,
                                    "total_tokens": 1191}
    assert whole["estimated_prompt_tokens"] == sum(estimates)
    if stop == "kill during map":
        held, ready = (lambda r: r.stage == "map"), (lambda: rows(history, "SELECT count(*) FROM run_plans") == [(1,)])
    else:
        fog = "Fog fills the street."  # ns/a2, in flight when the run stops
        held = lambda r: r.stage == "rate" and fog in r.rated_text  # noqa: E731
        ready = lambda: recorded_ratings(history) == ["ns/a", "ns/b", "ns/a1"]  # noqa: E731
    run_id, _ = killed_run(store, history, held, ready, "--select", "dynamic", paid=True,
                           signal_number=signal.SIGINT if stop == "interrupt" else signal.SIGKILL)
    paid_before = {"prompt_tokens": 10 * rated_before, "completion_tokens": rated_before, "cached_tokens": 0,
                   "total_tokens": 11 * rated_before}
    (listed,) = run_cli("runs", "list", "--history", str(history), "--json").json["runs"]
    shown = run_cli("runs", "show", run_id, "--history", str(history), "--json").json
    assert listed["usage_total"] == shown["usage_total"] == paid_before
    assert shown["estimated_prompt_tokens"] == sum(estimates[:rated_before])
    # at $0.11 a rating call, what the run paid before already reaches a resume's --max-cost
    prices = tmp_path / "prices.toml"
    prices.write_text('[prices."m"]\ninput = 10000\noutput = 10000\n', encoding="utf-8")
    with ScriptedChatServer(RatingServer(paid=True)) as server:
        capped = run_cli("resume", run_id, "--history", str(history), "--base-url", server.base_url,
                         "--config", str(prices), "--max-cost", f"{0.11 * rated_before - 0.01:.2f}", "--json")
        assert server.chat_requests() == []
    assert (capped.code, capped.json["status"], capped.json["cost"]["total"]) == (
        130, "cancelled", round(0.11 * rated_before, 9))
    result, sent = resumed(history, run_id, paid=True)
    assert len(sent) == 6 - rated_before + 2  # the ratings not made before, Map, Reduce
    assert (result["status"], result["usage_total"], result["estimated_prompt_tokens"]) == (
        "completed", whole["usage_total"], whole["estimated_prompt_tokens"])
    (listed,) = run_cli("runs", "list", "--history", str(history), "--json").json["runs"]
    assert listed["usage_total"] == whole["usage_total"]


def test_a_recorded_selection_setting_no_flag_accepts_is_one_line_and_the_run_stays_resumable(tmp_path: Path) -> None:
    """A resume took a dynamic run's recorded selection settings as they were: --rate-repeats
    0 crashed it (an internal error, and the run was left `failed`), 10**12 ran out of memory,
    and a threshold of 99 selected nothing."""
    store, history = walk_store(tmp_path / "walk.db"), tmp_path / "history.db"
    fog = "Fog fills the street."
    run_id, _ = killed_run(store, history, lambda r: r.stage == "rate" and fog in r.rated_text,
                           lambda: recorded_ratings(history) == ["ns/a", "ns/b", "ns/a1"], "--select", "dynamic")
    (selection,) = rows(history, "SELECT selection FROM runs")[0]
    for name, flag, value, bound in (("rate_repeats", "--rate-repeats", 0, "from 1 to 25"),
                                     ("rate_repeats", "--rate-repeats", 10**12, "from 1 to 25"),
                                     ("rate_threshold", "--rate-threshold", 99, "from 0 to 5"),
                                     ("max_level", "--max-level", -5, "at least 0")):
        damaged = json.loads(selection)
        damaged["options"][name] = value
        db = sqlite3.connect(history)
        db.execute("UPDATE runs SET selection = ?", (json.dumps(damaged),))
        db.commit()
        db.close()
        with ScriptedChatServer(RatingServer()) as server:
            for command in (("resume", run_id), ("rerun", run_id, "--all")):
                done = run_cli(*command, "--history", str(history), "--base-url", server.base_url, "--json")
                assert (done.code, done.stdout, done.stderr) == (
                    2, "", f"graphrag-tui: error: run {run_id}'s recorded {flag} must be an integer {bound}, got "
                            f"{value}\n")
            assert server.chat_requests() == []
        (listed,) = run_cli("runs", "list", "--history", str(history), "--json").json["runs"]
        assert listed["status"] == "interrupted"
    db = sqlite3.connect(history)
    db.execute("UPDATE runs SET selection = ?", (selection,))
    db.commit()
    db.close()
    result, _ = resumed(history, run_id)
    assert result["status"] == "completed"


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_rating_call_is_rate_limited_and_reports_usage_like_map(tmp_path: Path) -> None:
    store = walk_store(tmp_path / "walk.db")
    busy = Reply({"error": {"message": "slow down"}}, status=429, headers={"retry-after-ms": "20"})
    votes = {"The baker": [busy, Reply(completion(json.dumps({"reason": "no", "rating": 0}),
                                                   usage={"prompt_tokens": 70, "completion_tokens": 4,
                                                          "total_tokens": 74}))]}
    with ScriptedChatServer(RatingServer(votes)) as server:
        result, events = query(store, server, tmp_path, "--select", "dynamic")
    assert rated(result)["ns/b"] == (0, [0])
    limited = [e for e in events if e["type"] == "rate_limited"]
    assert [(e["community_id"], e["batch_index"], e["source"]) for e in limited] == [("ns/b", None, "retry-after-ms")]
    used = [e for e in events if e["type"] == "usage"]
    assert [(e["community_id"], e["usage"]["prompt_tokens"]) for e in used] == [("ns/b", 70)]
    assert result["usage_total"]["prompt_tokens"] == 70


def test_the_resolver_keeps_where_each_selection_setting_came_from(tmp_path: Path) -> None:
    from graphrag_tui.session.options import SettingsResolver

    config = tmp_path / "config.toml"
    config.write_text('[selection]\nselect = "dynamic"\nrate_repeats = 3\nmin_rank = 2\n', encoding="utf-8")
    resolver = SettingsResolver.load(config, no_config=False, environ={"GRAPHRAG_TUI_RATE_REPEATS": "5",
                                                                        "GRAPHRAG_TUI_KEEP_PARENT": "yes"})
    resolved = resolver.resolve({"max_level": "4"}, with_model=False).selection
    assert resolved.options.model_dump() == {"mode": "dynamic", "rate_threshold": 1, "keep_parent": True,
                                             "max_level": 4, "rate_repeats": 5, "min_rank": 2.0}
    assert {n: (s.source, s.label) for n, s in resolved.sources.items()} == {
        "select": ("config", f"config file {config}: [selection] select"),
        "rate_threshold": ("default", "--rate-threshold"),
        "keep_parent": ("environment", "GRAPHRAG_TUI_KEEP_PARENT"),
        "max_level": ("flag", "--max-level"),
        "rate_repeats": ("environment", "GRAPHRAG_TUI_RATE_REPEATS"),
        "min_rank": ("config", f"config file {config}: [selection] min_rank"),
    }


def test_caps_that_hold_dynamic_selection_back_for_long_are_said_before_its_first_rating_call(tmp_path: Path) -> None:
    """`--tpm 1` with dynamic selection: its rating calls come before any Map call, and the
    run said nothing while they waited hours. The calls sure to be sent (the shallowest
    level's, each repeat) are said as the run starts, counted as the gate counts them: each
    call's estimated prompt tokens (as an uncapped run reports them) plus its 256-token reply."""
    store = walk_store(tmp_path / "walk.db")

    def with_usage(request: Received) -> Reply:
        reply = RatingServer()(request)
        return Reply({**reply.body, "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})

    flags = ("--select", "dynamic", "--rate-repeats", "2")
    with ScriptedChatServer(with_usage) as server:
        result, events = query(store, server, tmp_path, *flags)
    first_wave = [e for e in events if e["type"] == "usage" and e.get("community_id") in ("ns/a", "ns/b")]
    assert len(first_wave) == 4 and rated(result)["ns/a"] == (3, [3, 3])
    least = sum(e["estimated_prompt_tokens"] + 256 for e in first_wave) * 60 * 1.01
    hours, minutes = divmod(round(least) // 60, 60)
    with ScriptedChatServer(RatingServer()) as server:
        process = subprocess.Popen(
            [EXECUTABLE, "query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m", *flags,
             "--tpm", "1", "--rpm", "600", "--no-config", "--no-history", "--json"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, env=clean_env(),
        )
        assert process.stderr is not None
        said, _, _ = select.select([process.stderr], [], [], 20)  # without the note: nothing, for hours
        note = process.stderr.readline() if said else ""
        wait_for(lambda: len(server.chat_requests()) >= 1)
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=20)
    assert note == (f"note: the rate caps (at most 600 requests and 1 token a minute) space dynamic selection's first 4 "
                    f"rating calls over at least {hours} h {minutes:02d} min\n")
    assert len(server.chat_requests()) == 1 and process.returncode == 130, stderr
    assert json.loads(stdout)["status"] == "cancelled"
