"""The Map, Reduce and rating prompts: today's wording as templates (engine/templates.py),
the answer's form (response type, language, general knowledge), and the prompts of a run
(`Prompts`). The prompt is every message's content joined by a newline."""

from __future__ import annotations

from functools import lru_cache

from pydantic import BaseModel, ConfigDict

from .ports import ChatMessage
from .templates import MESSAGE_BREAK, Template, TemplateSpec, parse_template

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


#: The templates (engine/templates.py): today's prompts, with the answer's form given by
#: options in `{answer_form}` (nothing when none is given: the default prompts are unchanged).
_REDUCE_HEAD, _, _REDUCE_FORMAT = REDUCE_INSTRUCTIONS.rpartition("\n")
MAP_TEMPLATE = f"{MAP_INSTRUCTIONS}\n{MESSAGE_BREAK}\nUser query: {{query}}\n\nCommunity summaries:\n{{context}}"
REDUCE_TEMPLATE = (
    f"{_REDUCE_HEAD}{{answer_form}}\n{_REDUCE_FORMAT}\n{MESSAGE_BREAK}\n"
    "User query: {query}\n\nSelected intermediate answers and source community IDs:\n{context}"
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
#: The rating template as a file holds it: `RATE_TEMPLATE` as the system message and the
#: question as the user's, as GraphRAG sends them.
RATE_MESSAGES_TEMPLATE = f"{RATE_TEMPLATE}\n{MESSAGE_BREAK}\n{{query}}"
#: Each template: the placeholders it must hold and those it may (README lists them).
TEMPLATE_SPECS: dict[str, TemplateSpec] = {
    "map": TemplateSpec(required=("query", "context")),
    "reduce": TemplateSpec(
        required=("query", "context"),
        optional=("response_type", "language", "general_knowledge", "answer_form"),
    ),
    "rate": TemplateSpec(required=("query", "description")),
}
DEFAULT_TEMPLATES: dict[str, str] = {"map": MAP_TEMPLATE, "reduce": REDUCE_TEMPLATE, "rate": RATE_MESSAGES_TEMPLATE}

#: GraphRAG's default response type (its `--response-type`).
DEFAULT_RESPONSE_TYPE = "multiple paragraphs"
#: What `{language}` says when --answer-language is not given.
QUESTION_LANGUAGE = "the language of the question"
#: GraphRAG's allow-general-knowledge instruction (query/structured_search/global_search).
GENERAL_KNOWLEDGE_INSTRUCTION = (
    "The response may also include relevant real-world knowledge outside the dataset, but it must be "
    "explicitly annotated with a verification tag [LLM: verify]. For example:\n"
    '"This is an example sentence supported by real-world knowledge [LLM: verify]."'
)
class Prompts(BaseModel):
    """The prompts of a run: the templates (today's unless a directory gave others) and the
    answer's form (None / False: not given)."""

    model_config = ConfigDict(frozen=True)

    map: str = MAP_TEMPLATE
    reduce: str = REDUCE_TEMPLATE
    #: Dynamic selection's rating prompt (`--select dynamic`).
    rate: str = RATE_MESSAGES_TEMPLATE
    response_type: str | None = None
    general_knowledge: bool = False
    answer_language: str | None = None
    #: The directory the templates came from (None: the built-in ones).
    directory: str | None = None

    def template(self, name: str) -> Template:
        return _parsed(name, getattr(self, name), self.directory)

    def answer_form(self) -> str:
        """The instructions of the answer's form given, each on a line of its own."""
        lines = []
        if self.response_type is not None:
            lines.append(f"Target response length and format: {self.response_type}")
        if self.answer_language is not None:
            lines.append(f"Write the answer in {self.answer_language}.")
        if self.general_knowledge:
            lines.append(GENERAL_KNOWLEDGE_INSTRUCTION)
        return "".join("\n" + line for line in lines)

    def form_values(self) -> dict[str, str]:
        return {
            "response_type": self.response_type or DEFAULT_RESPONSE_TYPE,
            "language": self.answer_language or QUESTION_LANGUAGE,
            "general_knowledge": GENERAL_KNOWLEDGE_INSTRUCTION if self.general_knowledge else "",
            "answer_form": self.answer_form(),
        }


DEFAULT_PROMPTS = Prompts()


@lru_cache(maxsize=32)
def _parsed(name: str, text: str, directory: str | None) -> Template:
    where = f"{directory}/{name}.txt" if directory else f"the built-in {name}.txt"
    return parse_template(text, TEMPLATE_SPECS[name], where)


def check_prompts(prompts: Prompts) -> Prompts:
    """Every template of `prompts` checked (InputError naming the file and placeholder)."""
    for name in TEMPLATE_SPECS:
        prompts.template(name)
    return prompts


def map_messages(query: str, content: str, prompts: Prompts = DEFAULT_PROMPTS) -> tuple[ChatMessage, ...]:
    return prompts.template("map").messages({"query": query, "context": content})


def reduce_messages(query: str, content: str, prompts: Prompts = DEFAULT_PROMPTS) -> tuple[ChatMessage, ...]:
    return prompts.template("reduce").messages({"query": query, "context": content, **prompts.form_values()})


def rate_messages(query: str, text: str, prompts: Prompts = DEFAULT_PROMPTS) -> tuple[ChatMessage, ...]:
    """The rating messages for one community's text: by default, as GraphRAG sends them, the
    filled `RATE_TEMPLATE` as the system message and the question as the user's."""
    return prompts.template("rate").messages({"query": query, "description": text})


def rate_prompt(query: str, text: str, prompts: Prompts = DEFAULT_PROMPTS) -> str:
    """The rating prompt for one community's text: the rating template's first message
    (`RATE_TEMPLATE` filled in, by default)."""
    return rate_messages(query, text, prompts)[0].content


def prompt_text(messages: tuple[ChatMessage, ...]) -> str:
    return "\n".join(m.content for m in messages)


def map_skeleton(query: str, prompts: Prompts = DEFAULT_PROMPTS) -> str:
    return prompt_text(map_messages(query, "", prompts))


def reduce_skeleton(query: str, prompts: Prompts = DEFAULT_PROMPTS) -> str:
    return prompt_text(reduce_messages(query, "", prompts))
