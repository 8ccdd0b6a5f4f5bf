"""The command line: the app, and the headless `query`, `plan`, `info`, `import-graphrag`,
and the run history's `runs`, `rerun` and `resume`."""

from __future__ import annotations

import os
import sys


def caused_by_interrupt(error: BaseException) -> bool:
    """Whether Ctrl+C caused `error`: Python 3.11 turns a KeyboardInterrupt raised while a
    class is made (in a field's `__set_name__`, as pydantic's models import) into a
    RuntimeError caused by it."""
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return True
        seen.add(id(cause))
        cause = cause.__cause__
    return False


def _interrupted_while_starting(kind: type[BaseException], value: BaseException, traceback: object) -> None:
    """Ctrl+C while the modules below are still importing, outside main()'s handling: one
    line and exit 130, as main() does, never a KeyboardInterrupt traceback."""
    if not caused_by_interrupt(value):
        return sys.__excepthook__(kind, value, traceback)  # type: ignore[arg-type]
    try:
        sys.stderr.write("graphrag-tui: interrupted\n")
        sys.stderr.flush()
    finally:
        os._exit(130)


def _interrupted_where_python_ignores_it(unraisable: sys.UnraisableHookArgs) -> None:
    """Ctrl+C that lands in code whose exceptions Python only reports, such as importlib's
    module-lock callback: "Exception ignored in ..." and a traceback, and the import goes on.
    The user asked to stop: one line and exit 130."""
    if not isinstance(unraisable.exc_value, KeyboardInterrupt):
        return sys.__unraisablehook__(unraisable)
    try:
        sys.stderr.write("graphrag-tui: interrupted\n")
        sys.stderr.flush()
    finally:
        os._exit(130)


# Only when this process is the graphrag-tui command: a program importing this module keeps
# its own handling of Ctrl+C.
if __name__ == "__main__" or os.path.basename(sys.argv[0] if sys.argv else "") == "graphrag-tui":
    sys.excepthook = _interrupted_while_starting
    sys.unraisablehook = _interrupted_where_python_ignores_it

# The other imports come after the hook: Ctrl+C while they load (most of the start-up) is handled.
import argparse
import contextlib
import errno
import logging
import signal
import threading
from collections.abc import Container, Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, NoReturn

# Only what every command needs: each command imports what it uses (the engine, pydantic,
# httpx, the settings, the store, the app), so that `runs list` starts without them.
from . import __version__
from .arguments import ascii_integer, flag, has_surrogates, shown
from .errors import InputError
from .history import RUN_STATUSES, RunHistory
from .safe_text import clean, inert_json, one_line, path_text
from .url_mask import mask_http_queries, mask_url_secrets, mask_urls
from .user_files import default_config_path, default_history_path, has_user_settings, user_path

if TYPE_CHECKING:
    from .config import UserDefaults
    from .engine import Event, Level, SearchPlan, SearchResult
    from .history import RunSummary
    from .models.factory import ModelSettings
    from .session import HistoryChoice, Resolved, RunSession, SearchRequest, SettingsResolver
    from .store import CommunityStore, NamespaceInfo

SUBCOMMANDS = ("query", "plan", "info", "import-graphrag", "copy", "search", "show", "tree", "runs", "rerun",
               "resume", "prompts")
RUNS_SUBCOMMANDS = ("list", "show", "export", "delete")
#: How many runs `runs list` shows unless told (--limit 0: all).
DEFAULT_RUNS_LIMIT = 20
SAMPLE_STORE = Path(__file__).resolve().parent.parent / "sample_db" / "sample.db"
EXIT_CODES = {"completed": 0, "partial": 0, "no_results": 0, "failed": 1, "cancelled": 130}
#: The exit status when stdout's reader went away (`graphrag-tui plan ... | head -1`): what a
#: shell reports for a tool that SIGPIPE ended, 128 + 13.
EXIT_BROKEN_PIPE = 141
EXTRACTIVE_NOTICE = (
    "note: the built-in extractive model answers (offline, deterministic): it is extractive, not an LLM. "
    "Use --base-url URL or --local-llm for an LLM."
)


# -- output: whatever came from outside (store, model, files) is made inert (safe_text) -------


def _say(text: str = "") -> None:
    """A line of human-readable output on stdout: control characters made visible."""
    print(clean(text))


def _say_json(value: object) -> None:
    """Exact JSON on stdout, inert on a terminal (every non-ASCII character escaped when
    stdout is not UTF-8)."""
    encoding = (sys.stdout.encoding or "").lower().replace("-", "").replace("_", "")
    print(inert_json(value, ascii_only=encoding != "utf8"))


#: The longest line on stderr: a message may quote store text (a community id of 1 MB made
#: a line of 1 MB).
MAX_MESSAGE_CHARS = 4_000


def _warn(text: str) -> None:
    """One line on stderr. A stderr nobody reads any more cannot stop the run."""
    try:
        print(one_line(text, MAX_MESSAGE_CHARS), file=sys.stderr, flush=True)
    except OSError:
        pass


class _OneLineFormatter(logging.Formatter):
    """--verbose log lines name communities and models from outside: one inert line each, a
    database URL's password and a request URL's query string masked."""

    def format(self, record: logging.LogRecord) -> str:
        return one_line(mask_http_queries(mask_urls(super().format(record))))


class _Parser(argparse.ArgumentParser):
    """Errors in one line, exit status 2 (`main` masks the passwords of the arguments it echoes)."""

    def error(self, message: str) -> NoReturn:
        raise InputError(f"{message} (see {self.prog} --help)")  # (masked where it is said: main)


def store_argument(text: str) -> Path | Any:
    """STORE: an SQLite file's path or a postgresql:// URL (`store.location`)."""
    from .store.location import parse_location

    try:
        return parse_location(text)
    except InputError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def path_argument(text: str) -> Path:
    """A path flag or argument: empty text (an unset variable, say) is refused, never the
    current directory."""
    if not text:
        raise argparse.ArgumentTypeError("the path is empty")
    return Path(text)


def typed_path_argument(text: str) -> str:
    """`path_argument` kept as typed (`out/` names a folder, where a Path drops the `/`)."""
    path_argument(text)
    return text


def _add_cost_limit_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--max-cost", metavar="USD", help="cancel the run once it has cost this much (needs prices)")


def _add_history_options(parser: argparse.ArgumentParser, *, recording: bool) -> None:
    group = parser.add_argument_group("run history")
    group.add_argument("--history", type=path_argument, metavar="PATH",
                       help="the run history file (default: the user data directory's history.db)")
    if recording:
        group.add_argument("--no-history", action="store_true", help="do not record this run")


def _add_config_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", type=path_argument, help="config file (default: the user config directory's config.toml)")
    parser.add_argument("--no-config", action="store_true", help="ignore the config file and GRAPHRAG_TUI_* variables")


def _add_model_options(parser: argparse.ArgumentParser, title: str) -> None:
    model = parser.add_argument_group(title)
    model.add_argument("--base-url", help="OpenAI-compatible API base URL, with the version path (http://host:11434/v1)")
    model.add_argument("--model", help="model name (default: the first one GET /models lists)")
    model.add_argument("--api-key-env", metavar="VAR", help="environment variable holding the API key")
    model.add_argument("--timeout", metavar="SECONDS", help="bound of each model call (default 120)")
    model.add_argument("--response-format", choices=("json_object", "json_schema", "text"))
    model.add_argument("--max-response-bytes", metavar="N", help="stop reading a response past N bytes (default 8388608)")
    model.add_argument("--local-llm", action="store_true", help="the embedded llama.cpp model (SmolLM2-135M)")
    limits = parser.add_argument_group("rate limits of the endpoint")
    limits.add_argument("--rpm", "--requests-per-minute", dest="requests_per_minute", metavar="N",
                        help="at most N requests per minute, evenly spaced")
    limits.add_argument("--tpm", "--tokens-per-minute", dest="tokens_per_minute", metavar="N",
                        help="at most N tokens per minute (estimated prompt tokens + output reserve)")
    limits.add_argument("--max-rate-wait", metavar="SECONDS",
                        help="what one batch may wait in all for 429s before it fails (default 300)")
    request = parser.add_argument_group("model request (an endpoint; default: the server's own)")
    request.add_argument("--temperature", metavar="T", help="sampling temperature, 0 to 2")
    request.add_argument("--top-p", metavar="P", help="nucleus sampling, 0 to 1")
    request.add_argument("--model-seed", metavar="N", help="the model's sampling seed (--seed is the shuffle's)")
    request.add_argument("--reasoning-effort", metavar="LEVEL", help="minimal, low, medium or high (reasoning models)")
    request.add_argument("--max-tokens-field", choices=("auto", "max_tokens", "max_completion_tokens"),
                         help="the body field of the reply's token limit (default auto: switches once if refused)")
    request.add_argument("--api-key-header", metavar="NAME", help="send the key raw in this header (gateways)")
    request.add_argument("--header", dest="headers", action="append", metavar="'NAME: VALUE'",
                         help="an extra request header (repeatable)")
    request.add_argument("--extra-body", metavar="JSON", help="extra body fields, as a JSON object")


def _add_search_options(parser: argparse.ArgumentParser, *, with_model: bool = True) -> None:
    from .engine import FALLBACK_DEFAULTS

    search = parser.add_argument_group("search")
    search.add_argument("--namespace", help="namespace to search (optional when the store has one)")
    search.add_argument("--level", default=None, help="'leaf' (default) or a community level number")
    for name, fallback in FALLBACK_DEFAULTS.items():
        search.add_argument("--" + name.replace("_", "-"), dest=name, metavar="N", help=f"default {fallback}")
    search.add_argument("--seed", help="seed of the shuffle, to replay a run")
    search.add_argument("--no-shuffle", action="store_true", help="keep the communities in id order")
    _add_config_options(search)  # type: ignore[arg-type]
    search.add_argument("--graphrag-settings", type=path_argument, metavar="SETTINGS_YAML",
                        help="a GraphRAG project's settings.yaml: its chat model, rate limits and global search defaults")
    _add_prompt_options(parser)
    select = parser.add_argument_group("community selection (GraphRAG's)")
    select.add_argument("--select", metavar="MODE",
                        help="level (the default: --level's communities), rollup (GraphRAG's static selection "
                             "at --level N) or dynamic (the model rates communities from the top down)")
    select.add_argument("--min-rank", metavar="X", help="only communities whose rank is at least X (every mode)")
    select.add_argument("--rate-threshold", metavar="N", help="dynamic: keep a community rated at least N (0-5; default 1)")
    select.add_argument("--keep-parent", action="store_true", help="dynamic: keep a parent whose children are kept")
    select.add_argument("--max-level", metavar="N",
                        help="dynamic: when a level keeps nothing, rate the whole next level down to N (default 2)")
    select.add_argument("--rate-repeats", metavar="N", help="dynamic: ratings per community, majority vote (default 1)")
    if not with_model:
        return
    _add_model_options(parser, "model (default: the built-in extractive model)")


def _add_prompt_options(parser: argparse.ArgumentParser) -> None:
    from .engine import DEFAULT_RESPONSE_TYPE

    form = parser.add_argument_group("prompts and the answer's form")
    form.add_argument("--prompts", type=path_argument, metavar="DIR",
                      help="prompt templates map.txt, reduce.txt, rate.txt (default: the built-in ones; see `prompts export`)")
    form.add_argument("--response-type", metavar="TEXT",
                      help=f"the answer's length and format, as GraphRAG's (\"{DEFAULT_RESPONSE_TYPE}\", \"a bulleted list\")")
    form.add_argument("--general-knowledge", action="store_true", default=None,
                      help="let the answer add knowledge from outside the data, marked [LLM: verify]")
    form.add_argument("--answer-language", metavar="LANGUAGE",
                      help="the answer's language (default: the question's)")


def build_parsers() -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    return build_app_parser(), build_tool_parser()


def build_app_parser() -> argparse.ArgumentParser:
    app = _Parser(prog="graphrag-tui", description="GraphRAG global search, live in the terminal.")
    app.add_argument("store", nargs="?", type=store_argument,
                     help="community store: an SQLite file or a postgresql:// URL (default: the bundled sample)")
    app.add_argument("--version", action="version", version=f"graphrag-tui {__version__}")
    _add_search_options(app)
    _add_history_options(app, recording=True)
    app.epilog = "commands: " + ", ".join(SUBCOMMANDS) + " (graphrag-tui COMMAND --help)"
    return app


def build_tool_parser(*, runs_only: bool = False) -> argparse.ArgumentParser:
    """The commands' parser; with `runs_only`, `runs` alone (its subcommands need neither the
    engine's defaults nor the store's kinds, which the other commands' options list)."""
    tool = _Parser(prog="graphrag-tui")
    commands = tool.add_subparsers(dest="command", required=True, parser_class=_Parser)
    if runs_only:
        _add_runs_parsers(commands)
        return tool
    for name, help_text in (("query", "run global search headless"), ("plan", "show the Map batches; no model calls")):
        sub = commands.add_parser(name, help=help_text)
        sub.add_argument("store", type=store_argument)
        sub.add_argument("question")
        _add_search_options(sub)
        sub.add_argument("--json", action="store_true", help="print the whole result as one JSON object")
        sub.add_argument("-v", "--verbose", action="store_true", help="log the run's steps on stderr")
        if name == "query":
            sub.add_argument("--events", type=path_argument, metavar="FILE", help="write every event as a JSON line")
            _add_cost_limit_option(sub)
            _add_history_options(sub, recording=True)
    _add_runs_parsers(commands)
    _add_continue_parsers(commands)
    info = commands.add_parser("info", help="namespaces, levels and counts of a store")
    info.add_argument("store", type=store_argument)
    info.add_argument("--json", action="store_true")
    add_explore_parsers(commands)
    imp = commands.add_parser("import-graphrag", help="import Microsoft GraphRAG Parquet output")
    imp.add_argument("source", type=path_argument, metavar="DIR")
    imp.add_argument("store", metavar="STORE", help="a SQLite file, or a postgresql:// URL")
    imp.add_argument("--namespace", required=True)
    imp.add_argument("--text", choices=("summary", "full_content"), default="summary")
    imp.add_argument("--strict", action="store_true",
                     help="PostgreSQL: refuse rows that graphrag-ts's constraints would change or skip")
    copy = commands.add_parser("copy", help="copy namespaces between stores (SQLite or PostgreSQL)")
    copy.add_argument("source", metavar="SRC", help="a SQLite file, or a postgresql:// URL")
    copy.add_argument("destination", metavar="DST", help="a SQLite file (created if absent), or a postgresql:// URL")
    copy.add_argument("--namespace", help="copy this namespace only (default: every namespace)")
    copy.add_argument("--replace", action="store_true", help="replace namespaces the destination already has")
    copy.add_argument("--strict", action="store_true",
                      help="refuse rows that graphrag-ts's constraints would change or skip")
    copy.add_argument("--json", action="store_true")
    prompts = commands.add_parser("prompts", help="the prompt templates: export the built-in ones for editing")
    prompt_verbs = prompts.add_subparsers(dest="prompts_command", required=True, parser_class=_Parser)
    export = prompt_verbs.add_parser("export", help="write map.txt, reduce.txt and rate.txt (the built-in prompts) into DIR")
    export.add_argument("directory", type=path_argument, metavar="DIR")
    return tool


def _add_runs_parsers(commands: Any) -> None:
    runs = commands.add_parser("runs", help="the run history: list, show, export, delete")
    verbs = runs.add_subparsers(dest="runs_command", required=True, parser_class=_Parser)
    listing = verbs.add_parser("list", help="recorded runs, newest first (the default)")
    listing.add_argument("--json", action="store_true")
    listing.add_argument("--limit", metavar="N", help=f"at most N runs (default {DEFAULT_RUNS_LIMIT}; 0: all)")
    listing.add_argument("--store", type=store_argument, metavar="S", help="only the runs of this store")
    listing.add_argument("--status", choices=RUN_STATUSES, help="only the runs with this status")
    show = verbs.add_parser("show", help="one run: its result, as query prints it")
    show.add_argument("run", metavar="RUN")
    show.add_argument("--json", action="store_true")
    export = verbs.add_parser("export", help="write a run as NAME.json and NAME.md, as the app's export does")
    export.add_argument("run", metavar="RUN")
    export.add_argument("name", type=typed_path_argument, metavar="NAME")
    export.add_argument("--overwrite", action="store_true", help="replace NAME.json and NAME.md if they exist")
    delete = verbs.add_parser("delete", help="delete a run from the history")
    delete.add_argument("run", metavar="RUN")
    for verb in (listing, show, export, delete):
        _add_config_options(verb)
        _add_history_options(verb, recording=False)


def _add_continue_parsers(commands: Any) -> None:
    rerun = commands.add_parser("rerun", help="a new run from a recorded one: its failed batches again, or all")
    rerun.add_argument("run", metavar="RUN")
    which = rerun.add_mutually_exclusive_group()
    which.add_argument("--failed", action="store_const", dest="mode", const="failed",
                       help="send the failed and cancelled batches again, keep the others (the default)")
    which.add_argument("--all", action="store_const", dest="mode", const="all", help="send every batch again")
    rerun.add_argument("--replan", action="store_true", help="plan again when the store changed (same seed and options)")
    resume = commands.add_parser("resume", help="finish an interrupted or cancelled run (the same run id)")
    resume.add_argument("run", metavar="RUN")
    for sub in (rerun, resume):
        sub.add_argument("--json", action="store_true", help="print the whole result as one JSON object")
        sub.add_argument("-v", "--verbose", action="store_true", help="log the run's steps on stderr")
        _add_config_options(sub)
        _add_model_options(sub, "model (default: the run's recorded endpoint; the key from its recorded variable)")
        sub.add_argument("--graphrag-settings", type=path_argument, metavar="SETTINGS_YAML",
                         help="the GraphRAG project whose .env holds the recorded key variable")
        _add_cost_limit_option(sub)
        _add_history_options(sub, recording=False)


# -- shared resolution: the session layer does it ----------------------------------------


def resolve_search_args(args: argparse.Namespace) -> tuple[Resolved, int | None]:
    """The options and model settings of a search command (the config file read once)."""
    from .engine import parse_seed

    if args.seed is not None and args.no_shuffle:
        raise InputError("--seed and --no-shuffle cannot be used together")
    seed = parse_seed(args.seed)
    resolver = settings_resolver(args)
    if resolver.project is not None:  # what it holds that is not used here, once
        from .graphrag_settings import unused_note

        for line in unused_note(resolver.project):
            _warn(line)
    return resolver.resolve(vars(args), with_model=hasattr(args, "base_url")), seed


def search_request(args: argparse.Namespace, resolved: Resolved, seed: int | None) -> SearchRequest:
    from .engine import parse_level
    from .session import SearchRequest

    selection = resolved.selection.options
    if selection.mode == "dynamic" and args.level is not None:
        raise InputError("--level does not apply to --select dynamic: it rates from the shallowest level down "
                         "(--max-level bounds how deep it rates a whole level)")
    return SearchRequest(
        query=args.question,
        namespace=args.namespace,
        level=parse_level(args.level),
        options=resolved.options.options,
        seed=seed,
        shuffle=not args.no_shuffle,
        selection=selection,
        prompts=resolved.prompts,
    )


def _prepared(
    args: argparse.Namespace, request: SearchRequest, history: Path | None = None, store: CommunityStore | None = None
) -> RunSession:
    """The run, planned; `store` stays open when given (dynamic selection plans again after rating)."""
    from .session import RunSession
    from .store.opening import open_store

    if store is not None:
        run = RunSession(store, history=history, on_warning=_warn)
        run.prepare(request)
        return run
    with open_store(args.store) as opened:
        run = RunSession(opened, history=history, on_warning=_warn)
        run.prepare(request)
    return run


def settings_resolver(args: argparse.Namespace) -> SettingsResolver:
    """The config file and environment of a command, read once."""
    from .session import SettingsResolver

    return SettingsResolver.load(args.config, no_config=args.no_config, environ=os.environ,
                                 graphrag_settings=getattr(args, "graphrag_settings", None))


def history_of(args: argparse.Namespace) -> HistoryChoice:
    """The run history of a command that reads or writes it."""
    return settings_resolver(args).history(vars(args))


# -- commands -----------------------------------------------------------------------------


def cmd_plan(args: argparse.Namespace) -> int:
    resolved, seed = resolve_search_args(args)
    if resolved.selection.options.mode == "dynamic":
        raise InputError("plan cannot show --select dynamic's batches: they depend on the model's ratings "
                         "(plan --select level or rollup, or run query)")
    run = _prepared(args, search_request(args, resolved, seed))
    plan = run.plan
    assert plan is not None
    report = plan_report(plan)
    report["estimated_cost"] = estimated_map_cost(report, resolved)
    selection = run.selected.report if run.selected is not None else None
    report["selection"] = selection.model_dump(mode="json") if selection is not None else None
    if args.json:
        _say_json(report)
        return 0
    mode = f", {selection.mode} selection" if selection is not None else ""
    _say(f"{plan.summary_count} summaries in {len(plan.batches)} Map batches (namespace {one_line(plan.namespace)}, "
         f"level {plan.level}{mode}, seed {plan.seed}, map prompt budget {plan.options.map_prompt_budget})")
    if report["estimated_cost"] is not None:
        cost = report["estimated_cost"]
        _say(f"estimated cost of the Map prompts: ${cost['input']:.4f} ({cost['prompt_tokens']} tokens of "
             f"{one_line(cost['model'])} input, estimated; replies and Reduce not included)")
    for batch in report["batches"]:
        ids = ", ".join(one_line(cid) for cid in batch["community_ids"])
        _say(f"  batch {batch['index']:>4}: {batch['prompt_tokens']:>6} tokens, {len(batch['parts'])} parts: {ids}")
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


def estimated_map_cost(report: dict[str, Any], resolved: Resolved) -> dict[str, Any] | None:
    """What the Map prompts cost at the model's input price, by the token estimate; None
    when no `[prices."model"]` table applies (or the model is named only by its server)."""
    from .engine import estimated_input_cost
    from .models.factory import model_name

    name = model_name(resolved.model) if resolved.model is not None else None
    prices = resolved.user_defaults.prices.get(name) if name else None
    if prices is None:
        return None
    tokens = sum(batch["prompt_tokens"] for batch in report["batches"])
    return {"model": name, "prompt_tokens": tokens, "input": estimated_input_cost(tokens, prices), "currency": "USD"}


def cmd_query(args: argparse.Namespace) -> int:
    from .session.options import parse_max_cost
    from .store.opening import open_store

    resolved, seed = resolve_search_args(args)
    assert resolved.model is not None and resolved.history is not None
    max_cost = parse_max_cost(args.max_cost)
    request = search_request(args, resolved, seed)
    with open_store(args.store) as store:  # open while the run goes: dynamic selection plans again
        run = _prepared(args, request, resolved.history.recording, store)
        events = EventsFile.open(args.events, inputs=input_files(args, resolved.history.path))
        return run_and_print(args, run, resolved.model, resolved.user_defaults, max_cost, events, resolved.environ)


def run_and_print(
    args: argparse.Namespace,
    run: RunSession,
    settings: ModelSettings,
    defaults: UserDefaults,
    max_cost: float | None,
    events: EventsFile | None = None,
    environ: Mapping[str, str] | None = None,
) -> int:
    """query, rerun and resume: the prepared run on its model (its rate limits, the prices
    of the config, the cost limit), the answer printed as it streams, then the run."""
    import asyncio

    printer = None if args.json else AnswerPrinter()
    listeners = [listener.write for listener in (events, printer) if listener is not None]

    def each_listener(event: Event) -> None:  # type: ignore[valid-type]
        for listen in listeners:
            listen(event)

    run.on_event = each_listener
    try:
        result = asyncio.run(_run_query(run, settings, defaults, max_cost, environ or os.environ))
    finally:
        if events is not None:
            events.close()
    if max_cost is not None and result.usage_total is None and any(b.attempts for b in result.batches):
        _warn(f"warning: the server reported no usage for any call, so --max-cost ${max_cost:g} "
              "limited nothing (only reported usage is priced)")
    return print_run(args, run, result, printer)


def print_run(args: argparse.Namespace, run: RunSession, result: SearchResult, printer: AnswerPrinter | None) -> int:
    """What query, rerun and resume print: the run's JSON, or the result and its run id."""
    if args.json:
        _say_json(run.document())
    else:
        print_result(result, streamed=printer.end() if printer is not None else None)
        parent = f" (a re-run of {run.parent_run_id})" if run.parent_run_id else ""
        if run.run_id is not None:  # unrecorded: --no-history, or a warning said why
            _say(f"run {run.run_id}{parent}")
    return EXIT_CODES[result.status]


class AnswerPrinter:
    """Text mode: the Reduce answer printed as it streams, flushed piece by piece (made
    inert like all text output). A retry starts over on a new line."""

    def __init__(self) -> None:
        self.attempt: int | None = None
        self.text: list[str] = []
        self._cr = False  # a CR held back: it may be the first half of a CRLF
        self.failed = False

    def write(self, event: Event) -> None:  # type: ignore[valid-type]
        from .engine import AnswerDelta

        if not isinstance(event, AnswerDelta) or self.failed:
            return
        piece = event.text
        if self.attempt is not None and event.attempt != self.attempt:
            self._out("\n\n(that reply was not valid; the retry's answer follows)\n\n")
            self.text, self._cr = [], False
        self.attempt = event.attempt
        self.text.append(piece)
        if self._cr:
            piece = "\r" + piece
        self._cr = piece.endswith("\r")
        self._out(clean(piece.removesuffix("\r").replace("\r\n", "\n")))

    def end(self) -> str | None:
        """The streamed answer (None when nothing streamed); the output goes on a new line."""
        if self.attempt is None:
            return None
        self._out(clean("\r") if self._cr else "")
        self._out("\n\n")
        return "".join(self.text)

    def _out(self, text: str) -> None:
        try:
            sys.stdout.write(text)
            sys.stdout.flush()
        except OSError:  # a closed pipe: main() reports it when the run has ended
            self.failed = True


def input_files(args: argparse.Namespace, history: Path) -> list[Path]:
    """What an output file must never be: the store and the run history with their SQLite
    companions (a WAL holds committed rows) and the config file."""
    from .output_paths import sqlite_files
    from .store.location import store_files

    return [*store_files(args.store), *sqlite_files(history), args.config or default_config_path()]


class EventsFile:
    """`--events`: one JSON line per event. Opened before the run (an input error if it
    cannot be); a write that fails mid-run is reported once on stderr and writing stops,
    while the run goes on and its result is printed as usual."""

    def __init__(self, path: Path, file: IO[str]) -> None:
        self.path, self.file = path, file
        self.failed = False

    @classmethod
    def open(cls, path: Path | None, *, inputs: list[Path]) -> EventsFile | None:
        from .output_paths import check_not_input

        if path is None:
            return None
        check_not_input(path, inputs, "--events")
        try:
            return cls(path, path.open("w", encoding="utf-8"))
        except OSError as error:
            raise InputError(f"--events: cannot write {path}: {error.strerror}") from None

    def write(self, event: Event) -> None:  # type: ignore[valid-type]
        if self.failed:
            return
        try:
            self.file.write(inert_json(event.model_dump(mode="json")) + "\n")
            self.file.flush()
        except OSError as error:
            self._give_up(error)

    def close(self) -> None:
        try:
            self.file.close()
        except OSError as error:
            self._give_up(error)

    def _give_up(self, error: OSError) -> None:
        if not self.failed:
            self.failed = True
            _warn(f"graphrag-tui: warning: --events: cannot write {self.path}: {error.strerror or error}; "
                  "the run goes on without its events")


async def _run_query(
    run: RunSession, settings: ModelSettings, defaults: UserDefaults, max_cost: float | None,
    environ: Mapping[str, str],
) -> SearchResult:
    import asyncio

    from .session import ModelSession
    from .session.options import cost_limit_prices

    models = ModelSession(environ)
    model = await models.open(settings)
    try:
        prices = cost_limit_prices(defaults, model, max_cost)
    except InputError:
        await models.close()
        raise
    if settings.kind == "extractive":
        _warn(EXTRACTIVE_NOTICE)
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGINT, run.cancel)
    try:
        result = await run.run(model, timeout=settings.timeout, settings=settings, prices=prices, max_cost=max_cost)
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        await models.close()
    if settings.kind != "extractive" and model_answered(result, run.prior):  # a note says only what is known
        _warn(f"note: {model.description} answered")
    return result


def model_answered(result: SearchResult, kept: Container[int] = ()) -> bool:
    """Whether any call this run made came back as a usable reply (`kept`: the batches a
    re-run or a resume kept from before, answered then)."""
    attempts = [a for b in result.batches if b.index not in kept for a in b.attempts] + result.reduce.attempts
    return any(a.error_kind is None for a in attempts)


def print_result(result: SearchResult, streamed: str | None = None, status: str | None = None) -> None:
    """The result in words. When the answer was printed as it streamed, it is not repeated
    (unless the final answer differs from what streamed). `status`: the history's, for a
    run that never finished (`interrupted`, `running`), which no result has."""
    from .engine import failed_batch_lines

    _say(f"status: {status or result.status}")
    if result.answer and result.answer != streamed:
        _say()
        _say(result.answer.replace("\r\n", "\n"))  # a lone CR (it rewrites the line) is shown
        _say()
    for line in filter(None, (result.detail, result.error and f"error: {result.error}")):
        _say(one_line(line))
    selected = len(result.selected_map_answers)
    _say(
        f"{result.summary_count} summaries, {result.batch_count} Map batches ({result.failed_batch_count} failed), "
        f"{selected} answers selected for Reduce, seed {result.seed}"
    )
    selection = result.selection
    if selection is not None:
        failed = sum(r.failed == len(r.votes) for r in selection.ratings)  # no usable vote: counted as 1
        unusable = f" ({failed} with no usable rating, counted as 1)" if failed else ""
        rated = f"{len(selection.ratings)} rated{unusable}, " if selection.mode == "dynamic" else ""
        _say(f"selection: {selection.mode}, {rated}{selection.selected_words}")
    if result.failed_batch_count:
        _say("failed batches:")
        for line in failed_batch_lines(result.batches):
            _say("  " + line)
    if result.cited_community_ids:
        _say("communities: " + ", ".join(one_line(cid) for cid in result.cited_community_ids))
    usage = result.usage_total
    if usage is not None:
        _say(f"tokens: {usage.prompt_tokens} prompt ({result.estimated_prompt_tokens} estimated, "
             f"{usage.cached_tokens} cached), {usage.completion_tokens} completion, {usage.total_tokens} total")
    if result.cost is not None and usage is not None:  # (none reported: $0 would read as free)
        _say(f"cost: ${result.cost.total:.4f} (input ${result.cost.input:.4f}, cached ${result.cost.cached:.4f}, "
             f"output ${result.cost.output:.4f})")


def cmd_info(args: argparse.Namespace) -> int:
    from .store.location import display_location
    from .store.opening import open_store

    with open_store(args.store) as store:
        namespaces = store.namespaces()
    if args.json:
        _say_json({"store": display_location(args.store), "namespaces": [n.model_dump(mode="json") for n in namespaces]})
        return 0
    _say(f"{one_line(display_location(args.store))}: {_counted(len(namespaces), 'namespace')}")
    for n in namespaces:
        levels = ", ".join(f"level {level}: {count}" for level, count in n.levels.items())
        _say(f"  {one_line(n.name)}: {_counted(n.community_count, 'community', 'communities')} "
             f"({_counted(n.leaf_count, 'leaf', 'leaves')}; {levels}), {_counted(n.claim_count, 'claim')}, "
             f"{_counted(n.chunk_count, 'chunk')}, {_counted(n.document_count, 'document')}, "
             f"{_counted(n.entity_count, 'entity', 'entities')}")
    return 0


def _counted(count: int, noun: str, plural: str | None = None) -> str:
    """`1 leaf`, `2 leaves`."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


def cmd_import(args: argparse.Namespace) -> int:
    """Ctrl+C (SIGINT) is noted, not raised, so that what is said is what happened: before
    the commit the import stops and nothing is written (exit 130); after it, the import is
    complete (exit 0, with a note)."""
    from .importer import ImportInterrupted, format_report, import_graphrag
    from .store.location import parse_location

    interrupted = threading.Event()
    previous = signal.signal(signal.SIGINT, lambda signum, frame: interrupted.set())
    try:
        try:
            report = import_graphrag(args.source, parse_location(args.store), args.namespace, args.text,
                                     interrupted=interrupted.is_set, strict=args.strict)
        except ImportInterrupted:
            _warn("graphrag-tui: interrupted: nothing was written")
            return 130
        _say(format_report(report))  # paths, names and notes come from outside
        if interrupted.is_set():
            _warn(f"note: the interrupt came after the import was committed: namespace "
                  f"'{report.namespace}' was imported in full")
        return 0
    finally:
        signal.signal(signal.SIGINT, previous)


def cmd_copy(args: argparse.Namespace) -> int:
    """`copy SRC DST`: one transaction; Ctrl+C before the commit writes nothing (exit 130)."""
    from .store.location import parse_location
    from .store.namespace_write import WriteInterrupted
    from .store.transfer import copy_store

    interrupted = threading.Event()
    previous = signal.signal(signal.SIGINT, lambda signum, frame: interrupted.set())
    try:
        try:
            report = copy_store(parse_location(args.source), parse_location(args.destination),
                                namespace=args.namespace, replace=args.replace, strict=args.strict,
                                interrupted=interrupted.is_set)
        except (WriteInterrupted, InputError) as error:
            if not (isinstance(error, WriteInterrupted) or interrupted.is_set()):
                raise
            _warn("graphrag-tui: interrupted: nothing was written")  # (a read that gave up on Ctrl+C, too)
            return 130
        if args.json:
            _say_json(report.to_json())
        else:
            for line in report.lines():
                _say(line)
        return 0
    finally:
        signal.signal(signal.SIGINT, previous)


def cmd_app(args: argparse.Namespace) -> int:
    from .engine import parse_level
    from .store.opening import open_store

    resolved, seed = resolve_search_args(args)
    assert resolved.model is not None
    if resolved.model.kind == "http" and resolved.model.base_url is not None:
        from .models.openai_http import parse_base_url

        parse_base_url(resolved.model.base_url)  # (the app names the endpoint on its first screen)
    level = parse_level(args.level)
    store_path = args.store or SAMPLE_STORE
    with open_store(store_path) as store:  # a bad store is an input error before the app starts
        check_app_scope(args.namespace, level, store.namespaces())
    from .tui.app import AppSettings, GraphRAGApp
    from .tui.keymap import check_keymap

    defaults = resolved.user_defaults  # the config file, read once for the whole command
    keymap = check_keymap(defaults.keymap, f"config file {defaults.config_file}: [keymap]")

    app = GraphRAGApp(
        AppSettings(
            store_path=store_path,
            namespace=args.namespace,
            level=level,
            options=resolved.options.options,
            seed=seed,
            shuffle=not args.no_shuffle,
            model=resolved.model,
            given_options=resolved.options.given,
            keymap=keymap,
            prices=defaults.prices,
            history=resolved.history.recording if resolved.history is not None else None,
            history_path=resolved.history.path if resolved.history is not None else None,
            selection=resolved.selection.options,
            prompts=resolved.prompts,
        ),
        environ=resolved.environ,
    )
    if not (sys.stdin.isatty() and sys.stdout.isatty()):  # (it drew into a pipe at full CPU, forever)
        raise InputError("the app needs a terminal: its input and output must both be one (for scripts: "
                         "graphrag-tui query)")
    app.run()
    return app.return_code or 0


def check_app_scope(namespace: str | None, level: Level, namespaces: list[NamespaceInfo]) -> None:
    """A namespace or level given on the command line must exist, as `query` requires: the
    app refuses it before it opens rather than showing another one."""
    from .engine import check_level, choose_namespace

    if namespace is None:
        return
    chosen = choose_namespace(namespace, [n.name for n in namespaces])
    check_level(level, chosen, next(n.levels for n in namespaces if n.name == chosen))


# -- exploring without a question: search, show, tree --------------------------------------


def _positive(flag_name: str, value: str | None, default: int | None) -> int | None:
    if value is None:
        return default
    number = ascii_integer(value)
    if number is None or number < 1:
        raise InputError(f"{flag_name} must be a positive integer, got {one_line(value, 40)!r}")
    return number


def add_explore_parsers(commands: Any) -> None:
    from .store.explore import KINDS

    search = commands.add_parser("search", help="full-text search of a namespace (communities, entities, claims, chunks)")
    search.add_argument("store", type=store_argument)
    search.add_argument("query", help='FTS5 syntax: words, "a phrase", prefix*')
    search.add_argument("--namespace")
    search.add_argument("--kind", choices=KINDS, help="search one kind only")
    search.add_argument("--limit", metavar="N", help="results per kind (default 20)")
    search.add_argument("--json", action="store_true")
    show = commands.add_parser("show", help="a community, entity, claim or chunk by id")
    show.add_argument("store", type=store_argument)
    show.add_argument("id", help="an id, kind:ID, or a bare GraphRAG community number")
    show.add_argument("--namespace", help="for a bare community number (optional when the store has one)")
    show.add_argument("--kind", choices=KINDS)
    show.add_argument("--json", action="store_true")
    tree = commands.add_parser("tree", help="the community hierarchy with leaf and claim counts")
    tree.add_argument("store", type=store_argument)
    tree.add_argument("--namespace")
    tree.add_argument("--depth", metavar="N", help="levels to show (1: the roots only; default all)")
    tree.add_argument("--json", action="store_true")


#: The largest `search --limit` (a larger one means every match, as this one does).
MAX_SEARCH_LIMIT = 2**31 - 1


def cmd_search(args: argparse.Namespace) -> int:
    from .session.explore import ExploreSession
    from .store.explore import KINDS
    from .store.opening import open_store
    from .store.search_index import check_query

    limit = _positive("--limit", args.limit, 20)
    assert limit is not None
    limit = min(limit, MAX_SEARCH_LIMIT)  # (more than the database's integers was an internal error)
    check_query(args.query)  # before anything is built
    kinds = (args.kind,) if args.kind else KINDS
    with open_store(args.store) as store:
        explore = ExploreSession(store, args.namespace)
        if not explore.text_search.ready():
            _warn("note: building the search index of this store (once, until the store changes)")
            explore.text_search.build()
        results = explore.text_search.search(args.query, kinds, limit)
    if args.json:
        _say_json(results.as_json())
        return 0
    for kind, hits in results.results.items():
        more = "+" if kind in results.more else ""
        _say(f"{kind} ({len(hits)}{more})")
        for hit in hits:
            _say(f"  {one_line(hit.id)}  {one_line(hit.title, 60)}")
            _say(f"      {hit.snippet}")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from .session.explore import find_in_store, view_of
    from .store.opening import open_store

    with open_store(args.store) as store:
        found = find_in_store(store, args.namespace, args.id, args.kind)
        view = view_of(store, found)
    if found.others:
        _warn(f"note: {found.id} is also a{'n' if found.others[0] == 'entity' else ''} "
              f"{' and '.join(found.others)} id: showing the {found.kind} (use --kind or KIND:ID)")
    assert view is not None
    shown = show_json(found.kind, view)
    if args.json:
        _say_json(shown)
    else:
        _say(f"{found.kind} {found.id}")
        for key, value in shown.items():
            if key in ("kind", "id"):
                continue
            if isinstance(value, list):
                _say(f"  {key}: {len(value)}")
                for item in value[:50]:
                    _say("    " + one_line(inert_json(item), 200))
            else:
                _say(f"  {key}: " + (one_line(value) if isinstance(value, str) else one_line(inert_json(value))))
    return 0


def show_json(kind: str, view: Any) -> dict[str, Any]:
    """`show --json`: `{"kind": ...}` then the view's fields (a claim's and a chunk's own
    fields at the top, with their chunk, or the claims citing it)."""
    data = view.model_dump(mode="json")
    if kind == "claim":
        data = {**data["claim"], "chunk": data["chunk"]}
    elif kind == "chunk":
        data = {**data["chunk"], "claims": data["claims"]}
    return {"kind": kind, **data}


#: `tree` indents this many levels at most (its lines say each level): a damaged chain of
#: 100,000 parent links wrote gigabytes of spaces.
TREE_INDENT_LEVELS = 64


def cmd_tree(args: argparse.Namespace) -> int:
    from .session.explore import ExploreSession
    from .store.explore import tree_json
    from .store.opening import open_store

    depth = _positive("--depth", args.depth, None)
    with open_store(args.store) as store:
        hierarchy = ExploreSession(store, args.namespace).hierarchy()
    tree = tree_json(hierarchy, depth)
    if args.json:
        try:
            _say_json(tree)
        except RecursionError:  # json nests no deeper than Python's recursion limit
            raise InputError(f"the hierarchy of namespace {tree['namespace']} is too deep to write as nested JSON: "
                             "give --depth (say --depth 100)") from None
        return 0
    apart = f" ({hierarchy.unreachable} in a cycle of parent links, reached from no root)" if hierarchy.unreachable else ""
    _say(f"namespace {one_line(tree['namespace'])}: {_counted(len(tree['roots']), 'root')}{apart}")
    stack = [(root, 1) for root in reversed(tree["roots"])]
    while stack:
        node, indent = stack.pop()
        rank = f", rank {node['rank']:g}" if node["rank"] is not None else ""
        more = f", {_counted(node['child_count'], 'child', 'children')}" if node["child_count"] and not node["children"] else ""
        _say(f"{'  ' * min(indent, TREE_INDENT_LEVELS)}{one_line(node['id'])}  "
             f"{one_line(node['name'] or '(no name)', 60)}  (level {node['level']}, "
             f"{_counted(node['leaf_count'], 'leaf', 'leaves')}, {_counted(node['claim_count'], 'claim')}{rank}{more})")
        stack += ((child, indent + 1) for child in reversed(node["children"]))
    return 0



# -- the run history ----------------------------------------------------------------------


def _runs_limit(value: str | None) -> int | None:
    if value is None:
        return DEFAULT_RUNS_LIMIT
    number = ascii_integer(value)
    if number is None or number < 0:
        raise InputError(f"--limit must be a whole number of runs (0: all), got {shown(value)}")
    return number or None


def runs_history_path(args: argparse.Namespace) -> Path:
    """The history the `runs` commands read: `history_of(args).path`. Without a config file
    or a GRAPHRAG_TUI_* variable (or with --no-config) nothing can change it but --history,
    and the settings are not loaded (pydantic-settings, the models): `runs list` starts fast."""
    if args.no_config or not has_user_settings(args.config, os.environ):
        return user_path(args.history, "--history") if args.history is not None else default_history_path()
    return history_of(args).path


def cmd_runs(args: argparse.Namespace) -> int:
    history = RunHistory(runs_history_path(args))
    if args.runs_command == "list":
        store = None
        if args.store is not None:
            from .store.location import store_identity

            store = store_identity(args.store)
            if has_surrogates(store):  # (a run history holds no such path: see session/run.py)
                raise InputError("--store is not valid UTF-8: no run of a store at such a path is recorded")
        damaged: list[str] = []
        runs = history.list_runs(limit=_runs_limit(args.limit), store=store, status=args.status,
                                 on_damaged=damaged.append)
        if damaged:  # the others are listed: one damaged row hid them all
            _warn(f"warning: {len(damaged)} run{'s' * (len(damaged) != 1)} of the history cannot be read and "
                  f"{'are' if len(damaged) != 1 else 'is'} not listed (the first: {damaged[0]})")
        if args.json:
            _say_json({"runs": [r.as_json() for r in runs]})
        else:
            print_runs(runs, history.succeeded_batches(r.run_id for r in runs))
        return 0
    if args.runs_command == "delete":
        _say(f"deleted run {one_line(history.delete(args.run))}")
        return 0
    stored = history.load(args.run)
    if args.runs_command == "show":
        from .session.recording import stored_document

        if args.json:
            _say_json(stored_document(stored))
        else:
            print_result(stored.result, status=stored.status if stored.status in ("running", "interrupted") else None)
            parent = f" (a re-run of {stored.summary.parent_run_id})" if stored.summary.parent_run_id else ""
            _say(f"run {stored.run_id}{parent}: {stored.status}, started {stored.summary.started_at}, "
                 f"finished {stored.summary.finished_at or '-'}")
        return 0
    from .export import existing_files, export_paths, write_export
    from .output_paths import sqlite_files
    from .session.recording import recorded_run_info, recorded_store, stored_document
    from .store.location import store_files
    from .store.opening import open_store

    existing = [] if args.overwrite else existing_files(export_paths(args.name))
    if existing:  # as the app asks first: an exported report may have been edited since
        raise InputError(f"runs export: {' and '.join(map(path_text, existing))} "
                         f"exist{'s' * (len(existing) == 1)}; nothing is written (--overwrite replaces them)")
    store_location = recorded_store(stored)
    inputs = [*store_files(store_location), *sqlite_files(history.path)]
    with contextlib.ExitStack() as stack:
        try:
            store = stack.enter_context(open_store(store_location))
        except InputError as error:  # moved or deleted since: the run itself is all in the history
            _warn(f"note: {error}: the report names the communities without their text")
            store = None
        info = recorded_run_info(stored)
        if store is not None and info is not None and info.store_changed:  # (as the app's view of the run says)
            _warn(f"note: the store {path_text(store_location)} changed since run {stored.run_id}: the report shows "
                  "its communities as the store has them now")
        json_path, md_path = write_export(stored.result, store, args.name, inputs=inputs, info=info,
                                          document=stored_document(stored))
    _say(f"wrote {path_text(json_path)} and {path_text(md_path)}")
    return 0


def print_runs(runs: list[RunSummary], succeeded: Mapping[str, int]) -> None:
    """`succeeded`: run id -> batches that succeeded (an interrupted run's others never finished)."""
    if not runs:
        _say("no recorded runs")
        return
    for r in runs:
        _say(f"{r.run_id}  {r.started_at[:19]}  {r.status:<11}  {succeeded.get(r.run_id, 0)}/{r.batch_count} ok  "
             f"{one_line(r.model or '-', 30)}  {one_line(r.namespace, 20)}/{r.level}  {one_line(r.question, 60)}")


def cmd_continue(args: argparse.Namespace) -> int:
    """`rerun` (a child run) and `resume` (the same run) of a recorded run."""
    from .session.continuation import model_settings_for, prepare_rerun, prepare_resume
    from .session.options import parse_max_cost
    from .session.recording import recorded_store
    from .store.opening import open_store

    resolver = settings_resolver(args)
    history = resolver.history(vars(args)).path
    max_cost = parse_max_cost(args.max_cost)
    stored = RunHistory(history).load(args.run)
    if max_cost is None and (stored.result.detail or "").startswith("cost limit reached"):
        _warn(f"note: run {stored.run_id} stopped at its cost limit (--max-cost); this {args.command} has no cost "
              "limit unless --max-cost gives one")
    settings = model_settings_for(stored, vars(args), configured=resolver.model_defaults())
    environ = {**os.environ, **resolver.environ_overlay} if resolver.environ_overlay else os.environ
    with open_store(recorded_store(stored)) as store:  # open while it goes: dynamic selection plans
        if args.command == "rerun":
            run = prepare_rerun(stored, store, history=history, mode=args.mode or "failed", replan=args.replan,
                                on_warning=_warn)
        else:
            run = prepare_resume(stored, store, history=history, on_warning=_warn)
        return run_and_print(args, run, settings, resolver.defaults, max_cost, environ=environ)


def cmd_prompts(args: argparse.Namespace) -> int:
    """`prompts export DIR`: the built-in templates written out for editing."""
    from .prompt_files import export_prompts

    for path in export_prompts(args.directory):
        _say(f"wrote {path_text(path)}")
    return 0


COMMANDS = {
    "prompts": cmd_prompts,
    "query": cmd_query, "plan": cmd_plan, "info": cmd_info, "import-graphrag": cmd_import, "copy": cmd_copy,
    "search": cmd_search, "show": cmd_show, "tree": cmd_tree,
    "runs": cmd_runs, "rerun": cmd_continue, "resume": cmd_continue,
}


def check_text_arguments(args: argparse.Namespace) -> None:
    """Text arguments (not paths: a file name may be any bytes) must be UTF-8: argv arrives
    decoded with surrogateescape, and such text can be neither sent nor stored."""
    for name, value in vars(args).items():
        if isinstance(value, str) and has_surrogates(value):
            raise InputError(f"{'the question' if name == 'question' else flag(name)} is not valid UTF-8")


def _run(argv: list[str]) -> int:
    if argv and argv[0] in SUBCOMMANDS:
        if argv[0] == "runs" and (len(argv) == 1 or argv[1] not in (*RUNS_SUBCOMMANDS, "-h", "--help")):
            argv = ["runs", "list", *argv[1:]]  # `runs` alone lists
        args = build_tool_parser(runs_only=argv[0] == "runs").parse_args(argv)
        check_text_arguments(args)
        if getattr(args, "verbose", False):
            handler = logging.StreamHandler(sys.stderr)
            handler.setFormatter(_OneLineFormatter("%(name)s: %(message)s"))
            logging.basicConfig(level=logging.INFO, handlers=[handler])
        return COMMANDS[args.command](args)
    args = build_app_parser().parse_args(argv)
    check_text_arguments(args)
    return cmd_app(args)


def _masked(text: str, argv: Sequence[str]) -> str:
    """An error line with every password masked: the URLs' in it, and each one given in the
    arguments, whole (argparse quotes arguments, a password may hold a space)."""
    for argument in argv:
        if argument.lower().startswith(("postgres://", "postgresql://")):
            text = mask_url_secrets(text, argument)
    return mask_urls(text)


class _NotedInterrupt:
    """Ctrl+C as Python raises it (KeyboardInterrupt), noted: raised inside a function SQLite
    calls (the store's checks at open), it reaches the command as the statement's error
    ("user-defined function raised exception"), which was said as a bad store (exit 2)."""

    def __init__(self) -> None:
        self.noted = False

    def __call__(self, signum: int, frame: object) -> None:
        self.noted = True
        raise KeyboardInterrupt


class OutputFailed(Exception):
    """Standard output could not be written (a full disk, /dev/full): said in one line."""


class _Output:
    """sys.stdout, whose failures to write are told apart from the other errors of an OS."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return int(self._stream.write(text))
        except BrokenPipeError:
            raise
        except OSError as error:
            raise OutputFailed(error.strerror or str(error)) from None

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            raise
        except OSError as error:
            raise OutputFailed(error.strerror or str(error)) from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def main(argv: Sequence[str] | None = None) -> int:
    as_program = argv is None
    argv = list(sys.argv[1:] if argv is None else argv)
    interrupt = _NotedInterrupt()
    if as_program:  # a character the terminal's encoding lacks is shown as "?", never a crash
        for stream in (sys.stdout, sys.stderr):
            if hasattr(stream, "reconfigure"):
                stream.reconfigure(errors="replace")
        signal.signal(signal.SIGINT, interrupt)
        if sys.stdout is None:  # (started with it closed: every line would be lost unsaid)
            _warn("graphrag-tui: error: cannot write the output: standard output is closed")
            return 2
        sys.stdout = _Output(sys.stdout)
    try:
        code = _run(argv)
        sys.stdout.flush()  # here, so that a closed pipe is caught below
    except BrokenPipeError:  # `graphrag-tui plan ... | head -1`: stop quietly, as Unix tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the exit's flush goes nowhere
        code = EXIT_BROKEN_PIPE
    except OutputFailed as error:  # (before: an internal error naming OSError)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # what is left of it goes nowhere
        _warn(f"graphrag-tui: error: cannot write the output: {error}")
        code = 2
    except KeyboardInterrupt:
        _warn("graphrag-tui: interrupted")
        code = 130
    except Exception as error:
        if interrupt.noted or caused_by_interrupt(error):  # (an error Ctrl+C caused)
            _warn("graphrag-tui: interrupted")
            code = 130
        elif isinstance(error, InputError):
            _warn(f"graphrag-tui: error: {_masked(str(error), argv)}")
            code = 2
        elif isinstance(error, OSError) and error.errno == errno.ENAMETOOLONG:
            # a path the user gave (a folder, a variable): Python 3.11's Path.exists() raises it
            _warn(f"graphrag-tui: error: cannot use {mask_urls(one_line(str(error.filename), 200))}: {error.strerror}")
            code = 2
        elif os.environ.get("GRAPHRAG_TUI_DEBUG"):
            raise
        else:
            _warn(f"graphrag-tui: internal error: {type(error).__name__}: {_masked(str(error), argv)} "
                  "(set GRAPHRAG_TUI_DEBUG=1 to see the traceback)")
            code = 1
    if as_program:  # the work is done: a late Ctrl+C must not print a traceback from the exit
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    return code


if __name__ == "__main__":
    sys.exit(main())
