"""Export a finished run: the result JSON (SPEC §5) and a Markdown provenance report.

No Textual imports: the TUI and scripts share this module.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .engine import SearchOptions, SearchResult
from .engine.replies import js_number
from .errors import InputError
from .output_paths import check_not_input
from .safe_text import clean, inert_json, one_line
from .store.store import CommunityDetail, CommunityStore
from .user_files import user_path

#: How much of a community summary the report quotes.
SUMMARY_EXCERPT_CHARS = 600
#: At most this many claims per community in the report (the JSON has no claims at all).
MAX_CLAIMS = 50
#: How much of a failed attempt's error the report keeps (the JSON keeps it whole).
ERROR_CHARS = 300


#: What starts an HTML tag, a comment or a declaration: a Markdown viewer renders it as HTML.
_TAG_START = re.compile(r"<(?=[A-Za-z/!?])")


def _inert_markdown(text: str) -> str:
    """Untrusted text as a Markdown viewer shows it, written: every `<` that would start a
    tag written `&lt;` (a reply's `<script>` or `<img onerror=…>` reached the report as HTML;
    `a < b` stays as it is), and every bracket and backslash escaped (a reply's link, remote
    image or footnote took effect, and its link reference definition turned the report's
    own citations into `javascript:` links)."""
    return _TAG_START.sub("&lt;", text).translate(_ESCAPED)


_ESCAPED = str.maketrans({"\\": "\\\\", "[": "\\[", "]": "\\]"})


def _inline(text: str | None, limit: int | None = None) -> str:
    """Cleaned and on one line (a heading or list item must not be split by the text)."""
    flat = one_line(text)
    if limit is not None and len(flat) > limit:
        flat = flat[: limit - 1].rstrip() + "…"
    return _inert_markdown(flat)


def _quote(text: str | None) -> str:
    """The text as a Markdown blockquote: every line starts with "> ", so a heading, list
    or fence inside untrusted text stays inside the quote."""
    lines = _inert_markdown(clean((text or "").replace("\r\n", "\n"))).split("\n")
    return "\n".join(f"> {line}".rstrip() for line in lines)


def export_paths(path: str | Path) -> tuple[Path, Path]:
    """`x.json`, `x.md` or `x` -> (`x.json`, `x.md`). Any other suffix is kept as part of
    the name (`run.v2` -> `run.v2.json`, `run.v2.md`)."""
    written = str(path)
    path = user_path(path, "the export's name")
    # ".", "/", "out/", "~", a folder: no name to add .json to (`out/` wrote out.json beside it)
    if path.name in ("", ".", "..") or written.endswith(("/", os.sep)) or _is_folder(path):
        raise InputError(f"Cannot export: {written!r} names a folder, not a file")
    if path.suffix.lower() in (".json", ".md"):
        base = path.with_suffix("")
    else:
        base = path
    return base.with_name(base.name + ".json"), base.with_name(base.name + ".md")


def _is_folder(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:  # a name too long, say: the checks of the files to write say what it is
        return False


def _community_section(community_id: str, detail: CommunityDetail | None) -> list[str]:
    out = [f"### Community {_inline(community_id)}", ""]
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


@dataclass(frozen=True)
class RunInfo:
    """What the result does not carry about its run: when, how long, which model and store,
    and the budgets (the app knows them; the report says them)."""

    started: datetime
    duration_s: float | None
    model: str
    store: str
    options: SearchOptions
    #: The store's file changed since the run (a recorded run's): its communities are as it has them now.
    store_changed: bool = False


def _run_lines(result: SearchResult, info: RunInfo | None) -> list[str]:
    out = []
    if info is not None:
        out.append(f"- Time: {info.started.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC")
        if info.duration_s is not None:
            out.append(f"- Duration: {info.duration_s:.1f} s")
    out.append(f"- Status: {result.status}")
    if info is not None:
        out += [f"- Model: {_inline(info.model)}", f"- Store: {_inline(info.store)}"]
    out += [
        f"- Namespace: {_inline(result.namespace)}",
        f"- Level: {result.level}",
        f"- Seed: {result.seed if result.seed is not None else 'none (not shuffled)'}",
    ]
    if info is not None:
        o = info.options
        out.append(f"- Budgets: Map {o.map_budget} tokens (reserve {o.map_reserve}), "
                   f"Reduce {o.reduce_budget} tokens (reserve {o.reduce_reserve}); concurrency {o.concurrency}")
    out += [
        f"- Summaries: {result.summary_count}",
        f"- Map batches: {result.batch_count} ({result.failed_batch_count} failed)",
    ]
    if result.error:
        out.append(f"- Error: {_inline(result.error)}")
    if result.detail:
        out.append(f"- Detail: {_inline(result.detail)}")
    if result.usage_total is not None:
        usage = result.usage_total
        out.append(f"- Tokens: {usage.prompt_tokens} prompt ({result.estimated_prompt_tokens} estimated, "
                   f"{usage.cached_tokens} cached), {usage.completion_tokens} completion, {usage.total_tokens} total")
    if result.cost is not None:
        cost = result.cost
        out.append(f"- Cost: ${cost.total:.4f} (input ${cost.input:.4f}, cached ${cost.cached:.4f}, "
                   f"output ${cost.output:.4f})")
    return out


def _failed_batches(result: SearchResult) -> list[str]:
    failed = [b for b in result.batches if b.status == "failed"]
    if not failed:
        return []
    out = ["## Failed batches", ""]
    for batch in failed:
        ids = ", ".join(_inline(cid) for cid in batch.community_ids)
        out += [f"### Batch {batch.index}", "", f"Communities: {ids}", ""]
        for attempt in batch.attempts:
            out.append(f"- Attempt {attempt.attempt}: {attempt.error_kind or 'error'}: "
                       f"{_inline(attempt.error, ERROR_CHARS) or '(no message)'}")
        if not batch.attempts:
            out.append("- No attempt was made.")
        out.append("")
    return out


def _selection(result: SearchResult) -> list[str]:
    """How the communities were chosen (issue 15): the mode, the selected ids, every rating."""
    selection = result.selection
    if selection is None:
        return []
    ids = ", ".join(_inline(cid) for cid in selection.selected) or "none"
    out = ["## Selection", "", f"- Mode: {selection.mode}", f"- Selected ({len(selection.selected)}): {ids}"]
    for rating in selection.ratings:
        kept = "kept" if rating.kept else "not kept"
        votes = ", ".join(str(v) for v in rating.votes)
        out.append(f"- {_inline(rating.community_id)} (level {rating.level}): rating {rating.rating} "
                   f"(votes {votes}), {kept}: {_inline(rating.reason, ERROR_CHARS) or '(no reason)'}")
    return [*out, ""]


def markdown_report(result: SearchResult, store: CommunityStore | None, info: RunInfo | None = None) -> str:
    """A readable provenance report: the run, the answer -> selected Map answers -> each
    community they rest on, once -> its claims -> the source text they cite; and each
    failed batch with its errors. Without the store (a recorded run's, moved or deleted
    since), the communities are named only."""
    out = [f"# {_inline(result.query) or '(empty question)'}", "", "## Run", ""]
    out += _run_lines(result, info)
    out += ["", "## Answer", ""]
    out += [_quote(result.answer) if result.answer else "_No answer._", ""]
    out += ["## Selected Map answers", ""]
    if not result.selected_map_answers:
        out += ["_None._", ""]
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
    out += _failed_batches(result)
    out += _selection(result)
    cited = list(dict.fromkeys(cid for selected in result.selected_map_answers for cid in selected.community_ids))
    if cited:
        out += ["## Communities", ""]
        if store is None:
            out += ["_The run's store was not at hand when this report was written: its communities' summaries, "
                    "claims and sources are not shown._", "", *(f"- {_inline(cid)}" for cid in cited), ""]
        else:
            if info is not None and info.store_changed:
                out += ["_The store changed since this run: its communities are shown as the store has them now._", ""]
            for community_id in cited:
                out += _community_section(community_id, store.community(community_id))
    return "\n".join(out).rstrip("\n") + "\n"


def write_export(
    result: SearchResult, store: CommunityStore | None, path: str | Path, *, inputs: Iterable[Path] = (),
    info: RunInfo | None = None, document: Mapping[str, Any] | None = None,
) -> tuple[Path, Path]:
    """Write `<stem>.json` (`document`: the run's JSON as `query --json` gives it, with its
    run id, parent, times and batch models; else the result's, SPEC §5) and `<stem>.md` (the
    report), by the rules of `write_files` (`inputs`: files the export must not overwrite,
    such as the store).

    Raises InputError (one line) when a file cannot be written."""
    json_path, md_path = export_paths(path)
    payload = inert_json(dict(document) if document is not None else result.model_dump(mode="json"), indent=2) + "\n"
    check_output_files((json_path, md_path), inputs)
    report = markdown_report(result, store, info)
    write_files(((json_path, payload), (md_path, report)), inputs)
    return json_path, md_path


# -- safe writing --------------------------------------------------------------------------

#: The longest file name most file systems accept, in bytes.
MAX_NAME_BYTES = 255


def check_output_file(target: Path, inputs: Iterable[Path] = (), action: str = "export") -> None:
    """InputError (one line) unless `target` can be written as a new or replaced regular
    file: its folder exists, its name is not too long, it is not an input, not a symlink
    (never written through), not a folder and not a device or pipe."""
    folder = target.parent
    try:
        os.fsencode(target)
    except UnicodeEncodeError:  # (a name set by a program, not typed: it crashed the export dialog)
        raise InputError(f"Cannot {action}: the path is not valid text (it holds a lone surrogate)") from None
    if len(os.fsencode(target.name)) > MAX_NAME_BYTES:
        raise InputError(
            f"Cannot {action}: the file name is too long ({len(os.fsencode(target.name))} bytes; "
            f"at most {MAX_NAME_BYTES})"
        )
    try:
        if not folder.exists():
            raise InputError(f"Cannot {action}: folder {folder} does not exist")
        if not folder.is_dir():
            raise InputError(f"Cannot {action}: {folder} is not a folder")
        check_not_input(target, inputs, f"Cannot {action}")
        if target.is_symlink():
            raise InputError(f"Cannot {action}: {target} is a symbolic link; it is never written through")
        if target.is_dir():
            raise InputError(f"Cannot {action}: {target} is a folder")
        if target.exists() and not target.is_file():
            raise InputError(f"Cannot {action}: {target} is not a regular file")
    except OSError as exc:  # e.g. a folder name too long, or a folder we may not search
        raise InputError(f"Cannot write {target}: {exc.strerror or exc}") from None


def check_output_files(targets: Iterable[Path], inputs: Iterable[Path] = ()) -> None:
    inputs = tuple(inputs)
    for target in targets:
        check_output_file(target, inputs)


def existing_files(targets: Iterable[Path]) -> list[Path]:
    """Those of `targets` that exist (a dangling symlink counts: it is there)."""
    return [t for t in targets if os.path.lexists(t)]


def _file_mode() -> int:
    """What a plain `open(path, "w")` would give a new file (0o666 less the umask)."""
    umask = os.umask(0o022)
    os.umask(umask)
    return 0o666 & ~umask


def write_files(files: Iterable[tuple[Path, str | bytes | Path]], inputs: Iterable[Path] = ()) -> None:
    """Write each (path, content), replacing what is there, never through a symlink. The
    content is text (written as UTF-8), bytes, or a file to copy (read in chunks).

    Each file is written to a new temporary file beside it, then renamed over the target:
    a rename replaces a directory entry and never follows a link, so a link that appears
    after the checks is replaced, not written through, and a failed write leaves the old
    file whole. Raises InputError (one line); nothing is renamed unless every file was
    written."""
    files = list(files)
    check_output_files((path for path, _ in files), inputs)
    written: list[tuple[str, Path]] = []
    try:
        for target, content in files:
            try:
                fd, temp = tempfile.mkstemp(dir=target.parent, prefix=".graphrag-tui-", suffix=".tmp")
            except OSError as exc:
                raise InputError(f"Cannot write {target}: {exc.strerror or exc}") from None
            written.append((temp, target))
            try:
                with os.fdopen(fd, "wb") as out:
                    os.fchmod(out.fileno(), _file_mode())
                    if isinstance(content, Path):
                        with content.open("rb") as source:
                            shutil.copyfileobj(source, out)
                    else:
                        out.write(content if isinstance(content, bytes) else content.encode("utf-8", "surrogatepass"))
            except OSError as exc:
                raise InputError(f"Cannot write {target}: {exc.strerror or exc}") from None
        for temp, target in written:
            try:
                os.replace(temp, target)
            except OSError as exc:
                raise InputError(f"Cannot write {target}: {exc.strerror or exc}") from None
    finally:
        for temp, _ in written:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp)
