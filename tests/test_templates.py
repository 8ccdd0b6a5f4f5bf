"""Prompt templates (engine/templates.py, engine/prompts.py): the built-in ones render today's
prompts byte for byte; placeholders are checked; values never split or re-parse a template."""

from __future__ import annotations

import pytest

from graphrag_tui.engine import DEFAULT_TEMPLATES, TEMPLATE_SPECS, Prompts, check_prompts
from graphrag_tui.engine.prompts import (
    MAP_INSTRUCTIONS,
    RATE_TEMPLATE,
    REDUCE_INSTRUCTIONS,
    map_messages,
    rate_messages,
    reduce_messages,
)
from graphrag_tui.engine.templates import TemplateSpec, parse_template
from graphrag_tui.errors import InputError


def test_the_built_in_templates_render_the_prompts_as_they_were() -> None:
    assert [(m.role, m.content) for m in map_messages("Q?", "C")] == [
        ("system", MAP_INSTRUCTIONS), ("user", "User query: Q?\n\nCommunity summaries:\nC")]
    assert [(m.role, m.content) for m in reduce_messages("Q?", "C")] == [
        ("system", REDUCE_INSTRUCTIONS),
        ("user", "User query: Q?\n\nSelected intermediate answers and source community IDs:\nC")]
    # the rating prompt (dynamic selection) as GraphRAG sends it: the filled prompt as the
    # system message, the question as the user's
    assert [(m.role, m.content) for m in rate_messages("Q?", "D {x}")] == [
        ("system", RATE_TEMPLATE.format(query="Q?", description="D {x}")), ("user", "Q?")]
    assert set(TEMPLATE_SPECS) == set(DEFAULT_TEMPLATES) == {"map", "reduce", "rate"}
    check_prompts(Prompts())


def test_a_rate_template_is_checked_and_rendered() -> None:
    custom = Prompts(rate="Rate {description} for {{q}}\n=== user ===\n{query}")
    assert [(m.role, m.content) for m in rate_messages("Q?", "text", custom)] == [
        ("system", "Rate text for {q}"), ("user", "Q?")]
    with pytest.raises(InputError) as caught:
        check_prompts(Prompts(rate="Rate {query} only", directory="/p"))
    assert str(caught.value) == "/p/rate.txt: missing placeholder {description} (the template needs {query}, {description})"
    with pytest.raises(InputError) as caught:
        check_prompts(Prompts(rate="{query} {description} {context}", directory="/p"))
    assert str(caught.value) == "/p/rate.txt: unknown placeholder {context} (allowed: {query}, {description})"


def test_values_are_inserted_as_they_are() -> None:
    # braces, a break line and a placeholder's name in the question or the content stay text
    query, content = "a {context} b\n=== user ===\n{{x}}", "}{ {query}"
    messages = map_messages(query, content)
    assert len(messages) == 2
    assert messages[1].content == f"User query: {query}\n\nCommunity summaries:\n{content}"


def test_the_answer_form_placeholders() -> None:
    template = "{response_type}|{language}|{general_knowledge}|{answer_form}\n=== user ===\n{query}{context}"
    bare = Prompts(reduce=template)
    (system, user) = reduce_messages("q", "c", bare)
    assert system.content == "multiple paragraphs|the language of the question||"
    assert user.content == "qc"
    given = Prompts(reduce=template, response_type="a list", answer_language="German")
    assert reduce_messages("q", "c", given)[0].content == (
        "a list|German||\nTarget response length and format: a list\nWrite the answer in German.")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{query}", "t/x.txt: missing placeholder {context} (the template needs {query}, {context})"),
        ("{query} {context} {other}", "t/x.txt: unknown placeholder {other} (allowed: {query}, {context}, {extra})"),
        ("{query} {context} {extra:>3}", "t/x.txt: placeholder {extra:>3} must be a plain name, like {extra}"),
        ("{query} {context} {extra.attr}", "t/x.txt: unknown placeholder {extra.attr} (allowed: {query}, {context}, {extra})"),
        ("{query} {context} }", "t/x.txt: Single '}' encountered in format string (write {{ and }} for literal braces)"),
        ("{query} {context}\x00", "t/x.txt: a template cannot hold NUL characters"),
        ("{query}" * 16 + "{context}\n=== user ===\n{query}",
         "t/x.txt: {query} appears 17 times; a template may hold each placeholder at most 16 times"),
    ],
)
def test_bad_templates_are_named(text: str, message: str) -> None:
    spec = TemplateSpec(required=("query", "context"), optional=("extra",))
    with pytest.raises(InputError) as error:
        parse_template(text, spec, "t/x.txt")
    assert str(error.value) == message


def test_a_template_split_keeps_each_side_and_one_message_without_a_break() -> None:
    spec = TemplateSpec(required=("query", "context"))
    split = parse_template("S {query}\n=== user ===\nU {context}", spec, "w")
    assert [(m.role, m.content) for m in split.messages({"query": "q", "context": "c"})] == [
        ("system", "S q"), ("user", "U c")]
    whole = parse_template("{query} and {{literal}} {context}", spec, "w")
    assert [(m.role, m.content) for m in whole.messages({"query": "q", "context": "c"})] == [
        ("user", "q and {literal} c")]
