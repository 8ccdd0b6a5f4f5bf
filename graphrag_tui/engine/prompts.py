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


#: GraphRAG's dynamic community selection prompt (query/context_builder/rate_prompt.py), in
#: this project's words: the model rates one community's own text against the question on
#: 0 to 5 and answers {"reason", "rating"}. Placeholders: {query}, {description}.
RATE_TEMPLATE = """---Role---
You are an assistant who decides whether the information given below helps to answer a question, even when it helps only in part.
---Goal---
Rate, on a scale from 0 to 5, how relevant or helpful the information is for answering the question.
---Information---
{description}
---Question---
{query}
---Response format---
Reply with a JSON object of two fields:
- "reason": why you gave the rating, naming the information you weighed.
- "rating": the relevance as an integer from 0 (not relevant at all) to 5 (directly answers the question).
{{"reason": "...", "rating": 0}}"""


def rate_prompt(query: str, text: str) -> str:
    """The rating prompt for one community's text (`RATE_TEMPLATE` filled in)."""
    return RATE_TEMPLATE.format(query=query, description=text)


def rate_messages(query: str, text: str) -> tuple[ChatMessage, ...]:
    """As GraphRAG sends it: the filled prompt as the system message, the question as the user's."""
    return (ChatMessage(role="system", content=rate_prompt(query, text)), ChatMessage(role="user", content=query))


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
