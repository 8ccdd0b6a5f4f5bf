"""The command line: the app, and the headless `query`, `plan`, `info`, `import-graphrag`."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any, NoReturn

from . import __version__
from .config import load_user_defaults
from .engine.events import Event
from .engine.options import FALLBACK_DEFAULTS, SearchOptions, resolve_options
from .engine.request import parse_level
from .engine.result import SearchResult
from .engine.search import GlobalSearch, SearchPlan
from .errors import InputError
from .models.factory import ModelSettings, open_model, resolve_model_settings
from .planning import prepare_plan
from .store import CommunityStore

SUBCOMMANDS = ("query", "plan", "info", "import-graphrag")
SAMPLE_STORE = Path(__file__).resolve().parent.parent / "sample_db" / "sample.db"
EXIT_CODES = {"completed": 0, "partial": 0, "no_results": 0, "failed": 1, "cancelled": 130}
EXTRACTIVE_NOTICE = (
    "note: the built-in extractive model answers (offline, deterministic): it is extractive, not an LLM. "
    "Use --base-url URL or --local-llm for an LLM."
)


class _Parser(argparse.ArgumentParser):
    """Errors in one line, exit status 2."""

    def error(self, message: str) -> NoReturn:
        raise InputError(f"{message} (see {self.prog} --help)")


def _add_search_options(parser: argparse.ArgumentParser, *, with_model: bool = True) -> None:
    search = parser.add_argument_group("search")
    search.add_argument("--namespace", help="namespace to search (optional when the store has one)")
    search.add_argument("--level", default=None, help="'leaf' (default) or a community level number")
    for name, fallback in FALLBACK_DEFAULTS.items():
        search.add_argument("--" + name.replace("_", "-"), dest=name, metavar="N", help=f"default {fallback}")
    search.add_argument("--seed", help="seed of the shuffle, to replay a run")
    search.add_argument("--no-shuffle", action="store_true", help="keep the communities in id order")
    search.add_argument("--config", type=Path, help="config file (default: the user config directory's config.toml)")
    search.add_argument("--no-config", action="store_true", help="ignore the config file and GRAPHRAG_TUI_* variables")
    if not with_model:
        return
    model = parser.add_argument_group("model (default: the built-in extractive model)")
    model.add_argument("--base-url", help="OpenAI-compatible API base URL, with the version path (http://host:11434/v1)")
    model.add_argument("--model", help="model name (default: the first one GET /models lists)")
    model.add_argument("--api-key-env", metavar="VAR", help="environment variable holding the API key")
    model.add_argument("--timeout", metavar="SECONDS", help="bound of each model call (default 120)")
    model.add_argument("--response-format", choices=("json_object", "json_schema", "text"))
    model.add_argument("--local-llm", action="store_true", help="the embedded llama.cpp model (SmolLM2-135M)")


def build_parsers() -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    app = _Parser(prog="graphrag-tui", description="GraphRAG global search, live in the terminal.")
    app.add_argument("store", nargs="?", type=Path, help="community store (default: the bundled sample)")
    app.add_argument("--version", action="version", version=f"graphrag-tui {__version__}")
    _add_search_options(app)
    app.epilog = "commands: " + ", ".join(SUBCOMMANDS) + " (graphrag-tui COMMAND --help)"

    tool = _Parser(prog="graphrag-tui")
    commands = tool.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name, help_text in (("query", "run global search headless"), ("plan", "show the Map batches; no model calls")):
        sub = commands.add_parser(name, help=help_text)
        sub.add_argument("store", type=Path)
        sub.add_argument("question")
        _add_search_options(sub)
        sub.add_argument("--json", action="store_true", help="print the whole result as one JSON object")
        sub.add_argument("-v", "--verbose", action="store_true", help="log the run's steps on stderr")
        if name == "query":
            sub.add_argument("--events", type=Path, metavar="FILE", help="write every event as a JSON line")
    info = commands.add_parser("info", help="namespaces, levels and counts of a store")
    info.add_argument("store", type=Path)
    info.add_argument("--json", action="store_true")
    imp = commands.add_parser("import-graphrag", help="import Microsoft GraphRAG Parquet output")
    imp.add_argument("source", type=Path, metavar="DIR")
    imp.add_argument("store", type=Path, metavar="STORE")
    imp.add_argument("--namespace", required=True)
    imp.add_argument("--text", choices=("summary", "full_content"), default="summary")
    return app, tool


# -- shared resolution --------------------------------------------------------------------


def resolve_search_args(args: argparse.Namespace) -> tuple[SearchOptions, ModelSettings | None, int | None]:
    if args.seed is not None and args.no_shuffle:
        raise InputError("--seed and --no-shuffle cannot be used together")
    seed = None
    if args.seed is not None:
        if not args.seed.strip().isdigit():
            raise InputError(f"--seed must be a non-negative integer, got {args.seed!r}")
        seed = int(args.seed)
    defaults = load_user_defaults(args.config, no_config=args.no_config, environ=os.environ)
    retrieval = {name: getattr(args, name) for name in FALLBACK_DEFAULTS}
    options = resolve_options(retrieval, defaults.retrieval)
    model = None
    if hasattr(args, "base_url"):
        flags = {k: getattr(args, k) for k in ("base_url", "model", "api_key_env", "timeout", "response_format", "local_llm")}
        model = resolve_model_settings(flags, defaults.model)
        if model.kind == "local":  # budgets must fit one slot of the local model (SPEC §4)
            from .models.local_llm import local_search_options

            options = local_search_options(retrieval, defaults.retrieval)
            model = model.model_copy(update={"local_slots": options.concurrency})
    return options, model, seed


def given_options(args: argparse.Namespace) -> frozenset[str]:
    """The retrieval options set by flags or the config file (the others are defaults)."""
    defaults = load_user_defaults(args.config, no_config=args.no_config, environ=os.environ)
    return frozenset(
        n for n in FALLBACK_DEFAULTS if getattr(args, n) is not None or defaults.retrieval.get(n) is not None
    )


def _plan(args: argparse.Namespace, options: SearchOptions, seed: int | None) -> SearchPlan:
    level = parse_level(args.level)
    with CommunityStore.open(args.store) as store:
        return prepare_plan(
            store, args.question, namespace=args.namespace, level=level, options=options, seed=seed, shuffle=not args.no_shuffle
        )


# -- commands -----------------------------------------------------------------------------


def cmd_plan(args: argparse.Namespace) -> int:
    options, _, seed = resolve_search_args(args)
    plan = _plan(args, options, seed)
    report = plan_report(plan)
    if args.json:
        print(json.dumps(report, ensure_ascii=False))
        return 0
    print(f"{plan.summary_count} summaries in {len(plan.batches)} Map batches "
          f"(namespace {plan.namespace}, level {plan.level}, seed {plan.seed}, map prompt budget {options.map_prompt_budget})")
    for batch in report["batches"]:
        ids = ", ".join(batch["community_ids"])
        print(f"  batch {batch['index']:>4}: {batch['prompt_tokens']:>6} tokens, {len(batch['parts'])} parts: {ids}")
    return 0


def plan_report(plan: SearchPlan) -> dict[str, Any]:
    options = plan.options
    return {
        "query": plan.query,
        "namespace": plan.namespace,
        "level": plan.level,
        "seed": plan.seed,
        "options": options.model_dump(),
        "map_prompt_budget": options.map_prompt_budget,
        "reduce_prompt_budget": options.reduce_prompt_budget,
        "summary_count": plan.summary_count,
        "batch_count": len(plan.batches),
        "batches": [
            {
                "index": b.index,
                "community_ids": list(b.community_ids),
                "parts": [p.model_dump() for p in b.parts],
                "prompt_tokens": plan.prompt_tokens(b),
            }
            for b in plan.batches
        ],
    }


def cmd_query(args: argparse.Namespace) -> int:
    options, settings, seed = resolve_search_args(args)
    assert settings is not None
    plan = _plan(args, options, seed)
    events_file = _open_events(args.events)
    try:
        result = asyncio.run(_run_query(plan, settings, events_file))
    finally:
        if events_file is not None:
            events_file.close()
    if args.json:
        print(json.dumps(result.model_dump(mode="json"), ensure_ascii=False))
    else:
        print_result(result)
    return EXIT_CODES[result.status]


def _open_events(path: Path | None) -> IO[str] | None:
    if path is None:
        return None
    try:
        return path.open("w", encoding="utf-8")
    except OSError as error:
        raise InputError(f"--events: cannot write {path}: {error.strerror}") from None


async def _run_query(plan: SearchPlan, settings: ModelSettings, events_file: IO[str] | None) -> SearchResult:
    model = await open_model(settings, os.environ)
    if settings.kind == "extractive":
        print(EXTRACTIVE_NOTICE, file=sys.stderr)
    else:
        print(f"note: {model.description} answers", file=sys.stderr)

    def on_event(event: Event) -> None:  # type: ignore[valid-type]
        if events_file is not None:
            events_file.write(json.dumps(event.model_dump(mode="json"), ensure_ascii=False) + "\n")
            events_file.flush()

    cancel = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGINT, cancel.set)
    try:
        return await GlobalSearch(plan, model, on_event=on_event, cancel=cancel, timeout=settings.timeout).run()
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        await model.aclose()


def print_result(result: SearchResult) -> None:
    print(f"status: {result.status}")
    if result.answer:
        print()
        print(result.answer)
        print()
    for line in filter(None, (result.detail, result.error and f"error: {result.error}")):
        print(line)
    selected = len(result.selected_map_answers)
    print(
        f"{result.summary_count} summaries, {result.batch_count} Map batches ({result.failed_batch_count} failed), "
        f"{selected} answers selected for Reduce, seed {result.seed}"
    )
    if result.cited_community_ids:
        print("communities: " + ", ".join(result.cited_community_ids))


def cmd_info(args: argparse.Namespace) -> int:
    with CommunityStore.open(args.store) as store:
        namespaces = store.namespaces()
    if args.json:
        print(json.dumps({"store": str(args.store), "namespaces": [n.model_dump(mode="json") for n in namespaces]}, ensure_ascii=False))
        return 0
    print(f"{args.store}: {len(namespaces)} namespace(s)")
    for n in namespaces:
        levels = ", ".join(f"level {level}: {count}" for level, count in n.levels.items())
        print(f"  {n.name}: {n.community_count} communities ({n.leaf_count} leaves; {levels}), "
              f"{n.claim_count} claims, {n.chunk_count} chunks, {n.document_count} documents, {n.entity_count} entities")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    """Ctrl+C (SIGINT) is noted, not raised, so that what is said is what happened: before
    the commit the import stops and nothing is written (exit 130); after it, the import is
    complete (exit 0, with a note)."""
    from .importer import ImportInterrupted, format_report, import_graphrag
    from .safe_text import clean, one_line

    interrupted = threading.Event()
    previous = signal.signal(signal.SIGINT, lambda signum, frame: interrupted.set())
    try:
        try:
            report = import_graphrag(args.source, args.store, args.namespace, args.text,
                                     interrupted=interrupted.is_set)
        except ImportInterrupted:
            print("graphrag-tui: interrupted: nothing was written", file=sys.stderr)
            return 130
        print(clean(format_report(report)), flush=True)  # paths, names and notes come from outside
        if interrupted.is_set():
            print(f"note: the interrupt came after the import was committed: namespace "
                  f"'{one_line(report.namespace)}' was imported in full", file=sys.stderr)
        return 0
    finally:
        signal.signal(signal.SIGINT, previous)


def cmd_app(args: argparse.Namespace) -> int:
    options, settings, seed = resolve_search_args(args)
    assert settings is not None
    level = parse_level(args.level)
    store_path = args.store or SAMPLE_STORE
    with CommunityStore.open(store_path):
        pass  # a bad store is an input error before the app starts
    from .tui.app import AppSettings, GraphRAGApp

    app = GraphRAGApp(
        AppSettings(
            store_path=store_path,
            namespace=args.namespace,
            level=level,
            options=options,
            seed=seed,
            shuffle=not args.no_shuffle,
            model=settings,
            given_options=given_options(args),
        )
    )
    app.run()
    return app.return_code or 0


COMMANDS = {"query": cmd_query, "plan": cmd_plan, "info": cmd_info, "import-graphrag": cmd_import}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    app_parser, tool_parser = build_parsers()
    try:
        if argv and argv[0] in SUBCOMMANDS:
            args = tool_parser.parse_args(argv)
            if getattr(args, "verbose", False):
                logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(name)s: %(message)s")
            return COMMANDS[args.command](args)
        return cmd_app(app_parser.parse_args(argv))
    except InputError as error:
        print(f"graphrag-tui: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("graphrag-tui: interrupted", file=sys.stderr)
        return 130
    except Exception as error:  # a bug: one line, the traceback only on request
        if os.environ.get("GRAPHRAG_TUI_DEBUG"):
            raise
        print(f"graphrag-tui: internal error: {type(error).__name__}: {error} "
              "(set GRAPHRAG_TUI_DEBUG=1 to see the traceback)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
