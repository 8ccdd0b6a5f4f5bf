"""SPEC §3.5/§3.6: parsing and validating model replies."""

import json

import pytest

from graphrag_tui.engine.prompts import MAP_INSTRUCTIONS, PLACEHOLDER_ANSWERS, REDUCE_INSTRUCTIONS
from graphrag_tui.engine.replies import (
    ReplyError,
    extract_json,
    js_number,
    parse_map_reply,
    parse_reduce_reply,
    repair_text,
)


def kind_of(raw: str, parse=parse_map_reply) -> str:
    with pytest.raises(ReplyError) as info:
        parse(raw)
    return info.value.kind


# -- extraction ---------------------------------------------------------------------------------


def test_plain_json() -> None:
    assert parse_map_reply('{"answer": "Floods.", "usefulness": 80}') == ("Floods.", 80)


def test_fenced_json() -> None:
    raw = 'Here you go:\n```json\n{"answer": "Floods.", "usefulness": 72.5}\n```\nThanks.'
    assert parse_map_reply(raw) == ("Floods.", 72.5)


def test_fenced_json_without_language_and_uppercase() -> None:
    assert parse_map_reply('```\n{"answer": "a", "usefulness": 1}\n```') == ("a", 1)
    assert parse_map_reply('```JSON\n{"answer": "a", "usefulness": 2}\n```') == ("a", 2)


def test_first_fenced_block_wins() -> None:
    raw = '```json\n{"answer": "first", "usefulness": 10}\n```\n```json\n{"answer": "second", "usefulness": 90}\n```'
    assert parse_map_reply(raw) == ("first", 10)


def test_json_inside_prose() -> None:
    raw = 'Sure! {"answer": "The trend is up.", "usefulness": 55} Hope that helps.'
    assert parse_map_reply(raw) == ("The trend is up.", 55)


def test_prose_inside_a_fence_still_extracts_the_span() -> None:
    raw = '```\nResult: {"answer": "x", "usefulness": 3} done\n```'
    assert parse_map_reply(raw) == ("x", 3)


def test_array_is_extracted_but_has_wrong_fields() -> None:
    assert extract_json("see [1, 2] ok") == [1, 2]
    assert kind_of('["answer", "usefulness"]') == "invalid_fields"


def test_not_json() -> None:
    assert kind_of("I cannot answer that.") == "invalid_json"
    assert kind_of("") == "invalid_json"
    assert kind_of('{"answer": "unterminated') == "invalid_json"
    assert kind_of("null") == "invalid_json"


# -- validation -----------------------------------------------------------------------------------


def test_usefulness_as_string_is_invalid() -> None:
    assert kind_of('{"answer": "a", "usefulness": "80"}') == "invalid_fields"


def test_usefulness_range() -> None:
    assert kind_of('{"answer": "a", "usefulness": 101}') == "invalid_fields"
    assert kind_of('{"answer": "a", "usefulness": -1}') == "invalid_fields"
    assert kind_of('{"answer": "a", "usefulness": 100.5}') == "invalid_fields"
    assert parse_map_reply('{"answer": "a", "usefulness": 100}') == ("a", 100)
    assert parse_map_reply('{"answer": "a", "usefulness": 0.5}') == ("a", 0.5)


def test_huge_integer_usefulness_is_invalid_not_a_crash() -> None:
    assert kind_of('{"answer": "a", "usefulness": ' + "9" * 400 + "}") == "invalid_fields"


def test_nan_and_infinity_are_not_json() -> None:
    assert kind_of('{"answer": "a", "usefulness": NaN}') == "invalid_json"
    assert kind_of('{"answer": "a", "usefulness": Infinity}') == "invalid_json"
    assert kind_of('{"answer": "a", "usefulness": -Infinity}') == "invalid_json"


def test_overflowing_float_is_rejected() -> None:
    # JSON.parse("1e400") is Infinity: valid JSON, not a finite number.
    assert kind_of('{"answer": "a", "usefulness": 1e400}') == "invalid_fields"


def test_boolean_usefulness_is_invalid() -> None:
    assert kind_of('{"answer": "a", "usefulness": true}') == "invalid_fields"
    assert kind_of('{"answer": "a", "usefulness": false}') == "invalid_fields"
    assert kind_of('{"answer": "a", "usefulness": null}') == "invalid_fields"


def test_missing_fields_and_wrong_answer_type() -> None:
    assert kind_of('{"answer": "a"}') == "invalid_fields"
    assert kind_of('{"usefulness": 5}') == "invalid_fields"
    assert kind_of('{"answer": 5, "usefulness": 5}') == "invalid_fields"
    assert kind_of('{"answer": null, "usefulness": 0}') == "invalid_fields"


def test_empty_answer_only_with_zero() -> None:
    assert kind_of('{"answer": "", "usefulness": 10}') == "invalid_fields"
    assert kind_of('{"answer": "   \\n ", "usefulness": 0.1}') == "invalid_fields"
    assert parse_map_reply('{"answer": "", "usefulness": 0}') == ("", 0)
    assert parse_map_reply('{"answer": "  ", "usefulness": 0}') == ("", 0)


def test_answer_is_trimmed() -> None:
    assert parse_map_reply('{"answer": "  spaced out \\n", "usefulness": 7}') == ("spaced out", 7)


def test_extra_fields_are_ignored() -> None:
    assert parse_map_reply('{"answer": "a", "usefulness": 9, "note": "x"}') == ("a", 9)


# -- reduce ---------------------------------------------------------------------------------------


def test_reduce_reply() -> None:
    assert parse_reduce_reply('```json\n{"answer": "  Final.  "}\n```') == "Final."
    assert parse_reduce_reply('Answer: {"answer": "Done"}') == "Done"


def test_reduce_reply_invalid() -> None:
    assert kind_of('{"answer": ""}', parse_reduce_reply) == "invalid_fields"
    assert kind_of('{"answer": "  "}', parse_reduce_reply) == "invalid_fields"
    assert kind_of('{"answer": 3}', parse_reduce_reply) == "invalid_fields"
    assert kind_of('{"text": "x"}', parse_reduce_reply) == "invalid_fields"
    assert kind_of("no json", parse_reduce_reply) == "invalid_json"


# -- numbers as JavaScript prints them --------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (80.0, "80"), (80, "80"), (33.5, "33.5"), (0, "0"), (0.0, "0"), (-0.0, "0"), (100.0, "100"), (0.1, "0.1"),
        (1e-7, "1e-7"), (1e-6, "0.000001"), (1e21, "1e+21"),
    ],
)
def test_js_number(value: float, text: str) -> None:
    assert js_number(value) == text


# -- hostile replies (issue 9) ----------------------------------------------------------------------

DEEP_ARRAY = "[" * 3000 + "]" * 3000
DEEP_OBJECT = '{"a":' * 3000 + "1" + "}" * 3000


@pytest.mark.parametrize(
    "raw",
    [DEEP_ARRAY, DEEP_OBJECT, f"Sure: {DEEP_ARRAY} ok", f"x {DEEP_OBJECT} y", f"```json\n{DEEP_OBJECT}\n```"],
    ids=["array", "object", "array-in-prose", "object-in-prose", "fenced"],
)
def test_deep_nesting_is_invalid_json_not_a_recursion_error(raw: str) -> None:
    assert kind_of(raw) == "invalid_json"
    assert kind_of(raw, parse_reduce_reply) == "invalid_json"


def test_nested_usefulness_is_named_not_printed() -> None:
    nested = '{"answer": "a", "usefulness": ' + "[" * 900 + "]" * 900 + "}"
    with pytest.raises(ReplyError) as info:
        parse_map_reply(nested)
    assert (info.value.kind, info.value.message) == ("invalid_fields", "`usefulness` must be a number, got an array")


def test_lone_surrogates_in_answers_become_replacement_characters() -> None:
    assert parse_map_reply('{"answer": "a\\ud800b\\udfff", "usefulness": 5}') == ("a\ufffdb\ufffd", 5)
    assert parse_reduce_reply('{"answer": "\\udc00 end"}') == "\ufffd end"
    assert parse_map_reply('{"answer": "pair \\ud83d\\ude00 kept", "usefulness": 5}') == ("pair \U0001f600 kept", 5)
    assert repair_text("ok \ud800") == "ok \ufffd"
    assert repair_text("ok é") == "ok é"


@pytest.mark.parametrize(
    "answer", ["string", " String ", "final answer text", "FINAL ANSWER TEXT", "answer", "a string", "a number"]
)
def test_an_answer_copying_the_prompts_placeholder_is_invalid(answer: str) -> None:
    assert kind_of(json.dumps({"answer": answer, "usefulness": 70})) == "invalid_fields"
    assert kind_of(json.dumps({"answer": answer, "usefulness": 0})) == "invalid_fields"
    assert kind_of(json.dumps({"answer": answer}), parse_reduce_reply) == "invalid_fields"


def test_answers_merely_containing_a_placeholder_word_are_fine() -> None:
    answer = "The answer is a string of islands."
    assert parse_map_reply(json.dumps({"answer": answer, "usefulness": 70}))[0] == answer
    assert parse_reduce_reply('{"answer": "The final answer text is here."}') == "The final answer text is here."


def test_every_placeholder_is_in_the_prompts_format_lines_or_the_old_example() -> None:
    format_lines = MAP_INSTRUCTIONS.splitlines()[-1] + REDUCE_INSTRUCTIONS.splitlines()[-1]
    assert format_lines == (
        'Return only a JSON object with two fields: "answer" (a string) and "usefulness" (a number).'
        'Return only a JSON object with one field: "answer" (a string).'
    )
    assert {p for p in PLACEHOLDER_ANSWERS if p not in format_lines} == {"final answer text"}
    assert "{" not in MAP_INSTRUCTIONS + REDUCE_INSTRUCTIONS  # no JSON example to copy
