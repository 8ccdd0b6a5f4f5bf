"""Citations inside an answer's text (tui/citations.py): which communities it cites, and the
Markdown it is shown as, with each citation a `community:` link."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Markdown

from graphrag_tui.history import RunHistory
from graphrag_tui.session.citations import cited_ids
from graphrag_tui.tui.citations import SCHEME, link_citations
from graphrag_tui.tui.screens.run_view import RunViewScreen
from tests.chat_server import Scripted, ScriptedChatServer, map_reply, reduce_reply
from tests.stores import three_leaves

from .conftest import ask, make_app, wait_finished, wait_until

IDS = ["ns/1", "ns/2"]
HUGE = "9" * 5000  # past the 4,300 digits int() converts


def test_a_citation_in_code_or_in_a_link_is_left_as_written() -> None:
    """A link made there changed what the Markdown shows: `ns/1` in a code span read
    `[ns/1](community:ns%2F1)`, and a link around an id was shown as its raw text."""
    text = ("Code `ns/1` and ``a `ns/2` b``, then ns/1.\n\n    indented ns/2\n\n```\nfenced ns/1\n```\n\n"
            "[about ns/2](https://example.com), https://example.com/ns/1 and <https://example.com/ns/2>.\n\n"
            "- a list of ns/1\n    continued by ns/2")
    assert link_citations(text, "ns", IDS) == text.replace(
        "then ns/1.", f"then [ns/1]({SCHEME}ns%2F1).").replace(
        "a list of ns/1", f"a list of [ns/1]({SCHEME}ns%2F1)").replace(
        "continued by ns/2", f"continued by [ns/2]({SCHEME}ns%2F2)")
    assert cited_ids(text, "ns", IDS) == IDS  # (cited all the same)


def test_report_numbers_are_read_as_written_however_long() -> None:
    text = f"Funded [Data: Reports (002, {HUGE}, \u0661)]."
    assert cited_ids(text, "ns", IDS) == ["ns/2", f"ns/{HUGE}"]  # (a digit other than ASCII is no number)
    assert link_citations(text, "ns", IDS) == f"Funded [Data: Reports ([002]({SCHEME}ns%2F2), {HUGE}, \u0661)]."


def test_only_the_whole_numbers_of_a_data_citation_are_reports() -> None:
    """`Reports (...)` is a citation inside GraphRAG's `[Data: ...]` only, and each of its
    items a report only when it is a number (prose made communities of a year, of a date's
    three parts, of `town/7`'s 7 and of `1.5`'s 1 and 5: found by a probe)."""
    prose = ("The Reports (Annual 1999) say so; see Reports (1999-03-04) and [Data: Reports (town/7, 1.5, "
             "1999-03-04)].")
    assert cited_ids(prose, "ns", IDS) == []
    cited = "Funded [Data: Reports ( 2 , 7, +more); Entities (5)] and [data: reports (3)]."
    assert cited_ids(cited, "ns", IDS) == ["ns/2", "ns/7", "ns/3"]
    assert link_citations(cited, "ns", IDS) == (
        f"Funded [Data: Reports ( [2]({SCHEME}ns%2F2) , 7, +more); Entities (5)] and [data: reports (3)].")


async def test_an_answer_citing_a_report_number_of_thousands_of_digits_is_shown(tmp_path: Path) -> None:
    """int() of it raised in the app's handler: the app exited with a traceback, and opening
    the recorded run did the same in every later session."""
    history = tmp_path / "history.db"
    answer = f"The bridge [Data: Reports (1, {HUGE})]."
    script = Scripted({c: map_reply("The port authority funds it.", 50) for c in ("ns/1", "ns/2", "ns/3")},
                      reduce=reduce_reply(answer))
    with ScriptedChatServer(script) as server:
        app = make_app(three_leaves(tmp_path / "harbour.db"), server.base_url, history=history)
        async with app.run_test(size=(140, 42)) as pilot:
            await ask(pilot)
            await wait_finished(pilot)
            # (a report number is a link whether or not the store has it: opening one says so)
            shown = f"The bridge [Data: Reports ([1]({SCHEME}ns%2F1), [{HUGE}]({SCHEME}ns%2F{HUGE}))]."
            assert app.screen.query_one("#answer-text", Markdown).source == shown
            (run,) = RunHistory(history).list_runs()
            app.open_stored_run(run.run_id)
            await wait_until(pilot, lambda: isinstance(app.screen, RunViewScreen) and app.screen.loaded,
                             what="the recorded run")
            assert app.screen.query_one("#answer-text", Markdown).source == shown
        assert app.return_code is None
