"""Export a finished run: the result JSON (SPEC §5) and a Markdown provenance report.

No Textual imports: the TUI and scripts share this module.
"""

from __future__ import annotations

import json
from pathlib import Path

from .engine.replies import js_number
from .engine.result import SearchResult
from .errors import InputError
from .safe_text import clean, one_line
from .store.store import CommunityDetail, CommunityStore

#: How much of a community summary the report quotes.
SUMMARY_EXCERPT_CHARS = 600
#: At most this many claims per community in the report (the JSON has no claims at all).
MAX_CLAIMS = 50


def _inline(text: str | None, limit: int | None = None) -> str:
    """Cleaned and on one line (a heading or list item must not be split by the text)."""
    flat = one_line(text)
    if limit is not None and len(flat) > limit:
        flat = flat[: limit - 1].rstrip() + "…"
    return flat


def _quote(text: str | None) -> str:
    """The text as a Markdown blockquote: every line starts with "> ", so a heading, list
    or fence inside untrusted text stays inside the quote."""
    lines = clean((text or "").replace("\r\n", "\n")).split("\n")
    return "\n".join(f"> {line}".rstrip() for line in lines)


def export_paths(path: Path) -> tuple[Path, Path]:
    """`x.json`, `x.md` or `x` -> (`x.json`, `x.md`). Any other suffix is kept as part of
    the name (`run.v2` -> `run.v2.json`, `run.v2.md`)."""
    path = Path(path).expanduser()
    if path.suffix.lower() in (".json", ".md"):
        base = path.with_suffix("")
    else:
        base = path
    return base.with_name(base.name + ".json"), base.with_name(base.name + ".md")


def _community_section(
    community_id: str, detail: CommunityDetail | None, seen: set[str]
) -> list[str]:
    out = [f"#### Community {_inline(community_id)}", ""]
    if community_id in seen:
        out += ["_Described above._", ""]
        return out
    seen.add(community_id)
    if detail is None:
        out += ["_Not found in the store._", ""]
        return out
    out += [
        f"- Name: {_inline(detail.name) or '(no name)'}",
        f"- Level: {detail.level}{' (leaf)' if detail.is_leaf else ''}",
        "",
    ]
    summary = clean(detail.summary).strip()
    if len(summary) > SUMMARY_EXCERPT_CHARS:
        summary = summary[: SUMMARY_EXCERPT_CHARS - 1].rstrip() + "…"
    out += ["Summary:", "", _quote(summary) if summary else "> (empty)", ""]
    if not detail.claims:
        out += ["_No claims._", ""]
        return out
    chunks = {chunk.id: chunk for chunk in detail.chunks}
    claims = detail.claims[:MAX_CLAIMS]
    out += ["Claims:", ""]
    for claim in claims:
        relation = _inline(claim.subject)
        if claim.object is not None:
            relation += f" -> {_inline(claim.object)}"
        cite = f" (chunk {_inline(claim.chunk_id)})" if claim.chunk_id is not None else ""
        out.append(f"- {relation}: {_inline(claim.description)}{cite}")
    if len(detail.claims) > MAX_CLAIMS:
        out.append(f"- … and {len(detail.claims) - MAX_CLAIMS} more claims")
    out.append("")
    cited = list(dict.fromkeys(c.chunk_id for c in claims if c.chunk_id is not None))
    if cited:
        out += ["Sources:", ""]
        for chunk_id in cited:
            chunk = chunks.get(chunk_id)
            if chunk is None:
                out += [f"- Chunk {_inline(chunk_id)}: _not found in the store._", ""]
                continue
            title = _inline(chunk.parent_title) or "(untitled document)"
            out += [f"Chunk {_inline(chunk.id)}, from *{title}*:", "", _quote(chunk.content), ""]
    return out


def markdown_report(result: SearchResult, store: CommunityStore) -> str:
    """A readable provenance report: answer -> selected Map answers -> communities ->
    claims -> the source text they cite."""
    out = [f"# {_inline(result.query) or '(empty question)'}", ""]
    out += [
        f"- Status: {result.status}",
        f"- Namespace: {_inline(result.namespace)}",
        f"- Level: {result.level}",
        f"- Seed: {result.seed if result.seed is not None else 'none (not shuffled)'}",
        f"- Summaries: {result.summary_count}",
        f"- Map batches: {result.batch_count} ({result.failed_batch_count} failed)",
    ]
    if result.error:
        out.append(f"- Error: {_inline(result.error)}")
    if result.detail:
        out.append(f"- Detail: {_inline(result.detail)}")
    out += ["", "## Answer", ""]
    out += [_quote(result.answer) if result.answer else "_No answer._", ""]
    out += ["## Selected Map answers", ""]
    if not result.selected_map_answers:
        out += ["_None._", ""]
    seen: set[str] = set()
    details: dict[str, CommunityDetail | None] = {}
    for rank, selected in enumerate(result.selected_map_answers, 1):
        ids = ", ".join(_inline(cid) for cid in selected.community_ids)
        out += [
            f"### {rank}. Usefulness {js_number(selected.usefulness)}",
            "",
            f"Communities: {ids}",
            "",
            _quote(selected.answer),
            "",
        ]
        for community_id in selected.community_ids:
            if community_id not in details:
                details[community_id] = store.community(community_id)
            out += _community_section(community_id, details[community_id], seen)
    return "\n".join(out).rstrip("\n") + "\n"


def write_export(result: SearchResult, store: CommunityStore, path: Path) -> tuple[Path, Path]:
    """Write `<stem>.json` (the result, SPEC §5) and `<stem>.md` (the report).

    Raises InputError (one line) when a file cannot be written."""
    json_path, md_path = export_paths(path)
    folder = json_path.parent
    if not folder.exists():
        raise InputError(f"Cannot export: folder {folder} does not exist")
    if not folder.is_dir():
        raise InputError(f"Cannot export: {folder} is not a folder")
    payload = json.dumps(result.model_dump(mode="json"), ensure_ascii=False, indent=2) + "\n"
    report = markdown_report(result, store)
    for target, text in ((json_path, payload), (md_path, report)):
        if target.is_dir():
            raise InputError(f"Cannot export: {target} is a folder")
        try:
            target.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise InputError(f"Cannot write {target}: {exc.strerror or exc}") from None
    return json_path, md_path
