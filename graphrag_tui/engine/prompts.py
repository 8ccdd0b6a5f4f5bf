"""The Map and Reduce prompts. The prompt is every message's content joined by a newline."""

from __future__ import annotations

from .ports import ChatMessage

MAP_INSTRUCTIONS = """You are the Map stage of GraphRAG global retrieval.
Answer the user query using only the supplied community summary excerpts.
Return a concise intermediate answer and a usefulness score from 0 to 100.
Usefulness measures how much this batch helps answer the query; it is not a confidence score.
Use 0 when the batch provides no relevant information. Do not invent facts.
Return only a JSON object with two fields: "answer" (a string) and "usefulness" (a number)."""

REDUCE_INSTRUCTIONS = """You are the Reduce stage of GraphRAG global retrieval.
Synthesize the selected intermediate answers into a direct, coherent answer to the query.
Use only the supplied intermediate answers, preserve their important qualifications, and do not invent facts.
If the answers disagree or leave a gap, state that limitation rather than guessing.
Return only a JSON object with one field: "answer" (a string)."""

#: What a model copying the reply's description (instead of answering) would put in
#: `answer`: the field names and types above, and the old example's placeholders
#: ("final answer text" is what SmolLM2-135M copied). Compared trimmed and casefolded.
PLACEHOLDER_ANSWERS = frozenset(
    {"answer", "usefulness", "string", "a string", "number", "a number", "final answer text"}
)


def map_messages(query: str, content: str) -> tuple[ChatMessage, ...]:
    return (
        ChatMessage(role="system", content=MAP_INSTRUCTIONS),
        ChatMessage(role="user", content=f"User query: {query}\n\nCommunity summaries:\n{content}"),
    )


def reduce_messages(query: str, content: str) -> tuple[ChatMessage, ...]:
    return (
        ChatMessage(role="system", content=REDUCE_INSTRUCTIONS),
        ChatMessage(
            role="user",
            content=f"User query: {query}\n\nSelected intermediate answers and source community IDs:\n{content}",
        ),
    )


def prompt_text(messages: tuple[ChatMessage, ...]) -> str:
    return "\n".join(m.content for m in messages)


def map_skeleton(query: str) -> str:
    return prompt_text(map_messages(query, ""))


def reduce_skeleton(query: str) -> str:
    return prompt_text(reduce_messages(query, ""))
