"""The CLI against hostile input (issue 9): stores, model replies, output paths, argv,
config and signals. Each test runs the real `graphrag-tui` against real files and the
scripted chat-completions server on 127.0.0.1, and asserts exact outputs."""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from graphrag_tui.safe_text import inert_json
from tests.chat_server import Reply, Scripted, ScriptedChatServer, completion, map_reply, reduce_reply
from tests.cli_runner import EXECUTABLE, clean_env, run_cli
from tests.graphrag_fixtures import write_index
from tests.stores import PAD, build_store, three_leaves

QUESTION = "Who funds the bridge?"
#: What a terminal would act on: a window title (OSC 0), a hyperlink (OSC 8), a clipboard
#: write (OSC 52), clear screen (CSI 2J), NUL, C1 CSI, DEL and a right-to-left override.
HOSTILE = "A\x1b]0;title\x07B\x1b]8;;http://evil/\x1b\\C\x1b]52;c;cHduZWQ=\x07D\x1b[2JE\x00F\x9bG\x7fH\u202eI"
#: The same, inert: C0 controls and DEL as visible Control Pictures, C1 as U+FFFD, bidi removed.
HOSTILE_SHOWN = "A␛]0;title␇B␛]8;;http://evil/␛\\C␛]52;c;cHduZWQ=␇D␛[2JE␀F\ufffdG␡HI"
NAMESPACE = "ns" + HOSTILE
NAMESPACE_SHOWN = "ns" + HOSTILE_SHOWN
#: No byte of these may reach a terminal: C0 but tab and newline, DEL, C1, bidi controls.
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def assert_inert(*texts: str) -> None:
    for text in texts:
        assert UNSAFE.search(text) is None, repr(text)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def hostile_store(tmp_path: Path) -> Path:
    """A namespace, community ids and summaries full of terminal control sequences."""
    return build_store(
        tmp_path / "hostile.db",
        [
            {"namespace": NAMESPACE, "id": f"{NAMESPACE}/1{HOSTILE}", "summary_content": f"Bridge {HOSTILE}. {PAD}"},
            {"namespace": NAMESPACE, "id": f"{NAMESPACE}/2", "summary_content": f"Fleets {HOSTILE}. {PAD}"},
        ],
    )


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return three_leaves(tmp_path / "harbour.db")


# -- 6. the terminal output is inert ----------------------------------------------------------


def test_info_shows_hostile_names_inert(hostile_store: Path) -> None:
    run = run_cli("info", str(hostile_store))
    assert (run.code, run.stderr) == (0, "")
    assert run.stdout == (
        f"{hostile_store}: 1 namespace\n"
        f"  {NAMESPACE_SHOWN}: 2 communities (2 leaves; level 0: 2), 0 claims, 0 chunks, 0 documents, 0 entities\n"
    )
    assert_inert(run.stdout)
    as_json = run_cli("info", str(hostile_store), "--json")
    assert_inert(as_json.stdout)
    assert as_json.json["namespaces"][0]["name"] == NAMESPACE  # the JSON keeps the exact text


def test_plan_shows_hostile_community_ids_inert(hostile_store: Path) -> None:
    run = run_cli("plan", str(hostile_store), QUESTION, "--no-config", "--no-shuffle")
    assert (run.code, run.stderr) == (0, "")
    lines = run.stdout.splitlines()
    assert lines[0] == (
        f"2 summaries in 1 Map batches (namespace {NAMESPACE_SHOWN}, level leaf, seed None, map prompt budget 7488)"
    )
    assert re.fullmatch(r"  batch    0: +\d+ tokens, 2 parts: (.*)", lines[1]).group(1) == (
        f"{NAMESPACE_SHOWN}/1{HOSTILE_SHOWN}, {NAMESPACE_SHOWN}/2"
    )
    assert len(lines) == 2
    assert_inert(run.stdout)
    as_json = run_cli("plan", str(hostile_store), QUESTION, "--no-config", "--no-shuffle", "--json")
    assert_inert(as_json.stdout)
    assert as_json.json["batches"][0]["community_ids"] == [f"{NAMESPACE}/1{HOSTILE}", f"{NAMESPACE}/2"]



def test_invisible_characters_in_ids_and_text_are_shown(tmp_path: Path) -> None:
    """Two ids that differ by a zero-width space looked the same in every output, and tag
    characters hid text that the model reads: both are shown as their code points; the JSON
    keeps the exact text."""
    hidden = "".join(chr(0xE0000 + ord(c)) for c in "obey")
    store = build_store(tmp_path / "s.db", [{"id": "ns/1", "summary_content": "Harbour." + hidden},
                                             {"id": "ns/\u200b1", "summary_content": "Bridge."}])
    run = run_cli("plan", str(store), QUESTION, "--no-config", "--no-shuffle")
    assert (run.code, run.stderr) == (0, "")
    assert run.stdout.splitlines()[1].endswith(" 2 parts: ns/1, ns/⟨U+200B⟩1")
    shown = run_cli("show", str(store), "ns/1")
    assert "Harbour.⟨U+E006F⟩⟨U+E0062⟩⟨U+E0065⟩⟨U+E0079⟩" in shown.stdout
    as_json = run_cli("plan", str(store), QUESTION, "--no-config", "--no-shuffle", "--json")
    assert "\\u200b" in as_json.stdout and as_json.json["batches"][0]["community_ids"] == ["ns/1", "ns/\u200b1"]

def test_verbose_logs_are_inert(hostile_store: Path) -> None:
    run = run_cli("query", str(hostile_store), QUESTION, "--no-config", "--no-shuffle", "-v")
    assert run.code == 0
    assert f"graphrag_tui.engine: map batch 0 communities={NAMESPACE_SHOWN}/1{HOSTILE_SHOWN}, {NAMESPACE_SHOWN}/2" \
        in run.stderr.splitlines()
    assert_inert(run.stdout, run.stderr)


def test_an_error_quoting_store_values_is_inert(hostile_store: Path) -> None:
    run = run_cli("plan", str(hostile_store), QUESTION, "--no-config", "--namespace", "other")
    assert (run.code, run.stdout) == (2, "")
    assert run.stderr == f"graphrag-tui: error: unknown namespace 'other'; the store has: {NAMESPACE_SHOWN}\n"


def test_an_error_quoting_a_huge_store_value_is_one_bounded_line(tmp_path: Path) -> None:
    """A community id of 1 MB, quoted by a planning error: a stderr line of 1 MB."""
    from tests.stores import build_store

    cid = "ns/" + "i" * 1_000_000
    store = build_store(tmp_path / "long-id.db", [{"id": cid, "summary_content": "A summary."}])
    run = run_cli("plan", str(store), QUESTION, "--no-config", "--map-budget", "300", "--map-reserve", "0")
    assert (run.code, run.stdout) == (2, "")
    (line,) = run.stderr.splitlines()
    assert len(line) == 4_000 and line.endswith("i…")
    assert line.startswith("graphrag-tui: error: ")


def test_query_text_output_and_notes_from_a_hostile_server_are_inert(hostile_store: Path) -> None:
    model = "evil-" + HOSTILE
    script = Scripted(
        {f"{NAMESPACE}/1{HOSTILE}": map_reply(f"Bridge {HOSTILE}", 80)},
        reduce=reduce_reply(f"The answer\n{HOSTILE}\r\nends.\rnow"),
    )
    with ScriptedChatServer(script, models=[model]) as server:
        args = ("query", str(hostile_store), QUESTION, "--no-config", "--no-shuffle", "--base-url", server.base_url)
        run = run_cli(*args)
        as_json = run_cli(*args, "--json")
        port = server.base_url.split(":")[2].split("/")[0]
    assert run.code == 0
    assert run.stderr == f"note: evil-{HOSTILE_SHOWN} @ 127.0.0.1:{port} answered\n"
    body, run_line = run.stdout.rstrip("\n").rsplit("\n", 1)
    assert body + "\n" == (
        "status: completed\n\n"
        f"The answer\n{HOSTILE_SHOWN}\nends.␍now\n\n"
        "2 summaries, 1 Map batches (0 failed), 1 answers selected for Reduce, seed None\n"
        f"communities: {NAMESPACE_SHOWN}/1{HOSTILE_SHOWN}, {NAMESPACE_SHOWN}/2\n"
    )
    assert re.fullmatch(r"run [0-9a-z]{12}", run_line), run_line
    listed = run_cli("runs", "--limit", "2").stdout  # the recorded model name, from the server, is inert too
    assert_inert(run.stdout, run.stderr, as_json.stdout, as_json.stderr, listed)
    assert listed.count(" evil-") == 2, listed
    result = as_json.json
    assert result["answer"] == f"The answer\n{HOSTILE}\r\nends.\rnow"  # exact in the JSON
    assert {r.json["model"] for r in server.chat_requests()} == {model}


def test_a_hostile_error_body_is_inert_in_text_output(store: Path) -> None:
    script = Scripted(
        {"ns/1": map_reply("Bridge.", 90), "ns/2": map_reply("", 0), "ns/3": map_reply("", 0)},
        reduce=Reply("boom " + HOSTILE, status=500),
    )
    with ScriptedChatServer(script) as server:
        run = run_cli("query", str(store), QUESTION, "--no-config", "--no-shuffle", "--map-budget", "330",
                      "--map-reserve", "0", "--base-url", server.base_url, "--model", "m1", "--no-history")
    assert run.code == 1
    assert run.stdout.splitlines() == [
        "status: failed",
        f"error: Reduce failed twice: HTTP 500: boom {HOSTILE_SHOWN}",
        "3 summaries, 3 Map batches (0 failed), 1 answers selected for Reduce, seed None",
        "communities: ns/1",
    ]
    assert_inert(run.stdout, run.stderr)


def test_json_output_is_exact_and_inert_even_with_lone_surrogates(tmp_path: Path) -> None:
    # valid JSON from the model, text that is not: a lone surrogate and every terminal control
    answer = "left \ud800 right " + HOSTILE + " \u2028 end"
    path = three_leaves(tmp_path / "s.db")
    script = Scripted(
        {"ns/1": map_reply("Bridge.", 90), "ns/2": map_reply("", 0), "ns/3": map_reply("", 0)},
        reduce=Reply(completion(json.dumps({"answer": answer}))),
    )
    with ScriptedChatServer(script) as server:
        run = run_cli("query", str(path), QUESTION, "--no-config", "--no-shuffle", "--map-budget", "330",
                      "--map-reserve", "0", "--base-url", server.base_url, "--model", "m1", "--json")
    assert "Traceback" not in run.stderr and "internal error" not in run.stderr
    assert_inert(run.stdout)
    assert "\u2028" not in run.stdout and "\ud800" not in run.stdout
    result = run.json
    # The engine keeps the text (the JSON escapes it exactly), repairs it with U+FFFD, or
    # finds the reply invalid (the run fails); the CLI prints the result in every case.
    if run.code == 0:
        assert result["answer"] in (answer, answer.replace("\ud800", "\ufffd"))
    else:
        assert (run.code, result["status"], result["answer"]) == (1, "failed", None)


@pytest.mark.parametrize("indent", [None, 2])
def test_inert_json_reads_back_exactly(indent: int | None) -> None:
    value = {"text": HOSTILE + "\ud800 \u2028 \u2029 \u200e é 😀\t\n", "n": [1, 2.5, None, True]}
    text = inert_json(value, indent=indent)
    assert json.loads(text) == value
    assert_inert(text)
    assert "é 😀" in text  # other characters stay readable
    assert text.encode("utf-8")  # no lone surrogate left to fail encoding
    ascii_text = inert_json(value, ascii_only=True, indent=indent)
    assert ascii_text.isascii() and json.loads(ascii_text) == value


def test_import_report_is_inert(tmp_path: Path) -> None:
    # A file name can hold neither NUL nor "/"; the rest stays. (A namespace with control
    # characters is refused by the importer, so only the index's path carries them.)
    name = HOSTILE.replace("\x00", "").replace("/", "_")
    shown = HOSTILE_SHOWN.replace("␀", "").replace("/", "_")
    source = write_index(tmp_path / f"out{name}\nline\ttab", "3.x")
    store = tmp_path / "imported.db"
    run = run_cli("import-graphrag", str(source), str(store), "--namespace", "imp")
    assert run.code == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[:2] == [
        f"Imported GraphRAG 3.x index {tmp_path}/out{shown}␊line␉tab",
        f"  into new store {store}, namespace 'imp' (community text: summary)",
    ]
    assert_inert(run.stdout, run.stderr)


def test_written_files_are_named_on_one_line_each(tmp_path: Path) -> None:
    directory = tmp_path / "new\nline"
    run = run_cli("prompts", "export", str(directory))
    assert (run.code, run.stderr) == (0, "")
    assert run.stdout.splitlines() == [f"wrote {tmp_path}/new␊line/{name}.txt" for name in ("map", "reduce", "rate")]


@pytest.mark.parametrize(("args", "config", "message"), [
    (["prompts", "export", ""], None, "argument DIR: the path is empty (see graphrag-tui prompts export --help)"),
    (["plan", "{store}", QUESTION, "--prompts", ""], None,
     "argument --prompts: the path is empty (see graphrag-tui plan --help)"),
    (["runs", "export", "r1", ""], None, "argument NAME: the path is empty (see graphrag-tui runs export --help)"),
    (["plan", "{store}", QUESTION], '[prompts]\ndir = ""\n', "config file {config}: [prompts] dir: the path is empty"),
    (["runs"], '[history]\npath = ""\n', "config file {config}: [history] path: the path is empty"),
], ids=["prompts-export", "prompts-flag", "runs-export", "prompts-config", "history-config"])
def test_an_empty_path_is_refused_not_the_current_folder(
    store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], config: str | None, message: str,
) -> None:
    """An empty path (an unset variable, say) was the current folder: `prompts export ""`
    wrote the templates there, and `--prompts ""` read whatever templates it held."""
    monkeypatch.chdir(tmp_path)
    config_file = tmp_path / "config.toml"
    extra = []
    if config is not None:
        config_file.write_text(config, encoding="utf-8")
        extra = ["--config", str(config_file)]
    run = run_cli(*[a.replace("{store}", str(store)) for a in args], *extra)
    assert (run.code, run.stdout) == (2, "")
    assert run.stderr == f"graphrag-tui: error: {message.replace('{config}', str(config_file))}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["harbour.db", *(["config.toml"] if config else [])])


def test_a_closed_pipe_ends_plan_quietly(tmp_path: Path) -> None:
    # Far more output than a pipe holds, so the writer meets the closed pipe.
    ids = [f"ns/{n:05d}-" + "x" * 90 for n in range(1500)]
    path = build_store(tmp_path / "wide.db", [{"id": cid, "summary_content": "Short text."} for cid in ids])
    process = subprocess.Popen(
        [EXECUTABLE, "plan", str(path), QUESTION, "--no-config", "--no-shuffle"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=clean_env(),
    )
    assert process.stdout is not None and process.stderr is not None
    assert process.stdout.readline().startswith(b"1500 summaries in ")
    process.stdout.close()
    stderr = process.stderr.read()
    assert process.wait(timeout=60) == 141
    assert stderr == b""


# -- 2. outputs never overwrite inputs; 8. output failures keep the result -------------------


@pytest.mark.parametrize("kind", ["same path", "symlink", "hard link"])
def test_events_onto_the_store_is_refused_before_any_call(store: Path, tmp_path: Path, kind: str) -> None:
    target = store
    if kind == "symlink":
        target = tmp_path / "link.jsonl"
        target.symlink_to(store)
    elif kind == "hard link":
        target = tmp_path / "hard.jsonl"
        os.link(store, target)
    before = sha256(store)
    with ScriptedChatServer(Scripted({})) as server:
        run = run_cli("query", str(store), QUESTION, "--no-config", "--base-url", server.base_url, "--model", "m1",
                      "--events", str(target))
    assert (run.code, run.stdout) == (2, "")
    assert run.stderr == f"graphrag-tui: error: --events: {target} is the input file {store}; choose another file\n"
    assert server.requests == []
    assert sha256(store) == before


@pytest.mark.parametrize("given", [True, False])
def test_events_onto_the_config_file_is_refused(store: Path, tmp_path: Path, given: bool) -> None:
    config = tmp_path / "graphrag-tui" / "config.toml"  # the user's default config file, under XDG_CONFIG_HOME
    config.parent.mkdir()
    config.write_text("[retrieval]\nconcurrency = 2\n")
    before = sha256(config)
    env = clean_env(XDG_CONFIG_HOME=str(tmp_path))
    run = run_cli("query", str(store), QUESTION, *(["--config", str(config)] if given else []), "--events", str(config),
                  env=env)
    assert (run.code, run.stdout) == (2, "")
    assert run.stderr == f"graphrag-tui: error: --events: {config} is the input file {config}; choose another file\n"
    assert sha256(config) == before


def test_events_onto_the_store_write_ahead_log_is_refused(tmp_path: Path) -> None:
    import sqlite3

    path = three_leaves(tmp_path / "wal.db")
    writer = sqlite3.connect(path)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("PRAGMA wal_autocheckpoint=0")
    writer.execute("UPDATE rag_community_summaries SET summary_content = 'committed in the WAL' WHERE id = 'ns/3'")
    writer.commit()
    wal = tmp_path / "wal.db-wal"
    before = sha256(wal)
    run = run_cli("query", str(path), QUESTION, "--no-config", "--events", str(wal))
    assert (run.code, run.stdout) == (2, "")
    assert run.stderr == f"graphrag-tui: error: --events: {wal} is the input file {wal}; choose another file\n"
    assert sha256(wal) == before
    writer.close()


@pytest.mark.parametrize("as_json", [True, False])
def test_events_write_failure_mid_run_keeps_the_result(store: Path, as_json: bool) -> None:
    script = Scripted({"ns/1": map_reply("Bridge.", 90), "ns/2": map_reply("", 0), "ns/3": map_reply("", 0)})
    with ScriptedChatServer(script) as server:
        run = run_cli("query", str(store), QUESTION, "--no-config", "--no-shuffle", "--map-budget", "330",
                      "--map-reserve", "0", "--base-url", server.base_url, "--model", "m1", "--events", "/dev/full",
                      *(["--json"] if as_json else []))
        port = server.base_url.split(":")[2].split("/")[0]
    assert run.code == 0
    assert run.stderr == (
        "graphrag-tui: warning: --events: cannot write /dev/full: No space left on device; "
        "the run goes on without its events\n"
        f"note: m1 @ 127.0.0.1:{port} answered\n"
    )
    if as_json:
        assert run.json["status"] == "completed" and run.json["answer"] == "The port authority funds it."
    else:
        assert run.stdout.splitlines()[:3] == ["status: completed", "", "The port authority funds it."]
    assert len(server.chat_requests()) == 4  # three Map batches and the Reduce: the run went on


@pytest.mark.parametrize("target", ["folder", "missing folder"])
def test_an_unwritable_events_file_is_an_input_error_before_the_run(store: Path, tmp_path: Path, target: str) -> None:
    path = tmp_path / "events.jsonl"
    if target == "folder":
        path.mkdir()
        reason = "Is a directory"
    else:
        path = tmp_path / "missing" / "events.jsonl"
        reason = "No such file or directory"
    with ScriptedChatServer(Scripted({})) as server:
        run = run_cli("query", str(store), QUESTION, "--no-config", "--base-url", server.base_url, "--model", "m1",
                      "--events", str(path))
    assert (run.code, run.stdout) == (2, "")
    assert run.stderr == f"graphrag-tui: error: --events: cannot write {path}: {reason}\n"
    assert server.requests == []


# -- 7. every invalid input is exit 2 with one line ------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--seed", "²"], "--seed must be a non-negative integer below 2^63, got '²'"),
        (["--level", "³"], "--level must be 'leaf' or a non-negative integer, got '³'"),
        (["--map-budget", "٣٠٠٠"], "--map-budget must be a positive integer, got '٣٠٠٠'"),
        (["--timeout", "١٢"], "--timeout must be a positive number of seconds, got '١٢'"),
        (["--seed", "9" * 5000], "--seed must be a non-negative integer below 2^63, got '" + "9" * 38 + "…"),
        (["--concurrency", "257"], "--concurrency must be at most 256 (parallel model calls), got 257"),
        (["--concurrency", "100000"], "--concurrency must be at most 256 (parallel model calls), got 100000"),
        (["--model", "m\udcff"], "--model is not valid UTF-8"),
        # a key typed where its variable's name goes was shown back ("names the environment variable sk-…")
        (["--base-url", "http://127.0.0.1:9/v1", "--api-key-env", "sk-ATTACK-SECRET-123"],
         "--api-key-env must be the name of an environment variable (letters, digits and _, not starting with a digit); "
         "it is not shown, as it may be the key itself"),
    ],
)
def test_bad_flags_are_one_line_and_exit_2(store: Path, args: list[str], message: str) -> None:
    run = run_cli("query", str(store), QUESTION, "--no-config", *args)
    assert (run.code, run.stdout, run.stderr) == (2, "", f"graphrag-tui: error: {message}\n")


@pytest.mark.parametrize(("args", "env", "message"), [
    (["--base-url", "http://127.0.0.1:99999/v1"], {}, "--base-url has port 99999, out of the range 1-65535"),
    # (named where it was given: it said --base-url)
    ([], {"GRAPHRAG_TUI_BASE_URL": "http://[::1"}, "GRAPHRAG_TUI_BASE_URL is not a valid URL"),
])
def test_the_app_with_a_base_url_it_cannot_use_is_one_line_before_it_starts(
    store: Path, tmp_path: Path, args: list[str], env: dict[str, str], message: str
) -> None:
    """The app crashed on its first screen, which names the endpoint, with a traceback that
    printed the model settings (extra headers and all)."""
    run = run_cli(str(store), *args, env=clean_env(XDG_CONFIG_HOME=str(tmp_path), **env), timeout=30)
    assert (run.code, run.stdout, run.stderr) == (2, "", f"graphrag-tui: error: {message}\n")


def test_the_app_without_a_terminal_is_one_line(store: Path, tmp_path: Path) -> None:
    """With its input or output not a terminal the app drew escape codes into them at full
    CPU until killed (found by a probe)."""
    run = run_cli(str(store), "--no-config", env=clean_env(XDG_CONFIG_HOME=str(tmp_path)), timeout=30)
    assert (run.code, run.stdout, run.stderr) == (2, "", "graphrag-tui: error: the app needs a terminal: its input "
                                                  "and output must both be one (for scripts: graphrag-tui query)\n")


def test_a_question_that_is_not_utf8_is_an_input_error(store: Path) -> None:
    # argv bytes that are not UTF-8 arrive as lone surrogates (surrogateescape)
    done = subprocess.run([EXECUTABLE, "query", str(store), b"Who funds \xff?", "--no-config"],
                          capture_output=True, env=clean_env(), timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (2, b"", b"graphrag-tui: error: the question is not valid UTF-8\n")


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ("[model]\nbase_url = 5\n", "[model] base_url must be a string, got 5"),
        ("[model]\nmodel = 5\n", "[model] model must be a string, got 5"),
        ("[model]\napi_key_env = 5\n", "[model] api_key_env must be a string, got 5"),
        ('[model]\ntimeout = "x"\n', "[model] timeout must be a positive number of seconds, got 'x'"),
        ('[model]\nresponse_format = "yaml"\n',
         "[model] response_format must be one of json_object, json_schema, text, got 'yaml'"),
        ("[retrieval]\nmap_budget = -3\n", "[retrieval] map_budget must be a positive integer, got -3"),
        # The minus sign is not a digit (it was counted as one).
        pytest.param("[retrieval]\nmap_budget = -1" + "0" * 400 + "\n",
                     "[retrieval] map_budget must be a positive integer, got a 401-digit number", id="a-huge-negative-number"),
        ("[retrieval]\nconcurrency = 1000\n", "[retrieval] concurrency must be at most 256 (parallel model calls), got 1000"),
        ("[retrieval]\nmap_budget = 500\nmap_reserve = 500\n",
         "[retrieval] map_budget (500) must exceed [retrieval] map_reserve (500)"),
        ("retrieval = 5\n", "retrieval must be a section ([retrieval] with its keys), got 5"),
    ],
)
def test_config_errors_name_the_file_section_and_key(store: Path, tmp_path: Path, config: str, message: str) -> None:
    path = tmp_path / "config.toml"
    path.write_text(config)
    run = run_cli("query", str(store), QUESTION, "--config", str(path))
    assert (run.code, run.stdout, run.stderr) == (2, "", f"graphrag-tui: error: config file {path}: {message}\n")


@pytest.mark.parametrize(("config", "message"), [
    ('[history]\npath = "/tmp/a\\u0000b"\n', "[history] path: the path holds a NUL character"),
    ('[history]\npath = "~nosuchuser/h.db"\n', "[history] path: ~nosuchuser is no user's home directory"),
    ('[prompts]\ndir = "~nosuchuser/x"\n', "[prompts] dir: ~nosuchuser is no user's home directory"),
])
def test_a_path_in_the_config_that_no_system_call_takes_is_one_line(
    store: Path, tmp_path: Path, config: str, message: str
) -> None:
    path = tmp_path / "config.toml"
    path.write_text(config)
    commands = [("query", str(store), QUESTION, "--model", "extractive")] + [("runs",)] * ("[history]" in config)
    for command in commands:  # (`runs` reads no [prompts])
        run = run_cli(*command, "--config", str(path))
        assert (run.code, run.stdout, run.stderr) == (2, "", f"graphrag-tui: error: config file {path}: {message}\n")


def test_a_settings_file_with_no_end_or_no_writer_is_one_line(store: Path, tmp_path: Path) -> None:
    """/dev/zero says its size is 0 and never ends (it was read until the kernel killed the
    CLI); a FIFO nothing writes to blocked the reader forever; a regular file is read no
    further than 1 MiB."""
    templates, project, big = tmp_path / "templates", tmp_path / "project", tmp_path / "big.toml"
    templates.mkdir()
    project.mkdir()
    (templates / "map.txt").symlink_to("/dev/zero")
    os.mkfifo(tmp_path / "fifo.toml")
    (project / "settings.yaml").write_text("models: {}\n")
    os.mkfifo(project / ".env")
    with big.open("wb") as handle:
        handle.truncate(2 << 20)
    for flag, value, message in (
        ("--config", "/dev/zero", "config file /dev/zero is not a regular file"),
        ("--graphrag-settings", "/dev/zero", "settings.yaml /dev/zero is not a regular file"),
        ("--prompts", str(templates), f"the prompt template {templates / 'map.txt'} is not a regular file"),
        ("--config", str(tmp_path / "fifo.toml"), f"config file {tmp_path / 'fifo.toml'} is not a regular file"),
        ("--graphrag-settings", str(project / "settings.yaml"), f".env {project / '.env'} is not a regular file"),
        ("--config", str(big), f"config file {big} is larger than 1048576 bytes"),
    ):
        run = run_cli("query", str(store), QUESTION, "--model", "extractive", "--no-history", flag, value, timeout=60)
        assert (run.code, run.stdout, run.stderr) == (2, "", f"graphrag-tui: error: {message}\n")


def test_a_store_or_history_path_too_long_for_the_system_is_one_line(tmp_path: Path) -> None:
    long = tmp_path / ("a" * 300)
    run = run_cli("query", str(long), QUESTION, "--model", "extractive", "--no-config")
    assert (run.code, run.stdout, run.stderr) == (2, "", f"graphrag-tui: error: Cannot read store {long}: File name too long\n")
    listed = run_cli("runs", "--history", str(long), "--no-config")
    assert (listed.code, listed.stdout) == (2, "")
    assert listed.stderr == f"graphrag-tui: error: run history {long} cannot be opened: File name too long\n"
    home = run_cli("runs", "--history", "~nosuchuser/h.db", "--no-config")
    assert (home.code, home.stderr) == (2, "graphrag-tui: error: --history: ~nosuchuser is no user's home directory\n")


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("GRAPHRAG_TUI_MAP_BUDGET", "-3", "GRAPHRAG_TUI_MAP_BUDGET must be a positive integer, got '-3'"),
        ("GRAPHRAG_TUI_CONCURRENCY", "300", "GRAPHRAG_TUI_CONCURRENCY must be at most 256 (parallel model calls), got 300"),
        ("GRAPHRAG_TUI_TIMEOUT", "soon", "GRAPHRAG_TUI_TIMEOUT must be a positive number of seconds, got 'soon'"),
        ("GRAPHRAG_TUI_MODEL", "m\udcff", "GRAPHRAG_TUI_MODEL is not valid UTF-8"),
    ],
)
def test_environment_errors_name_the_variable(store: Path, tmp_path: Path, variable: str, value: str, message: str) -> None:
    env = clean_env(**{variable: value, "XDG_CONFIG_HOME": str(tmp_path)})  # no config file
    run = run_cli("plan", str(store), QUESTION, env=env)
    assert (run.code, run.stdout, run.stderr) == (2, "", f"graphrag-tui: error: {message}\n")


# -- 10. Ctrl+C during start-up -----------------------------------------------------------------


def _maps_library(pid: int, name: str) -> bool:
    try:
        return name in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


class _Interrupting:
    """A class attribute whose `__set_name__` meets Ctrl+C, as a pydantic field can while
    its model's module imports."""

    def __set_name__(self, owner: type, name: str) -> None:
        raise KeyboardInterrupt


def _interrupt_while_a_class_is_made(argv: list[str]) -> int:
    type("Model", (), {"field": _Interrupting()})
    return 0


def test_ctrl_c_while_a_class_is_made_is_an_interrupt_not_an_internal_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Python 3.11 turns it into a RuntimeError caused by the KeyboardInterrupt: it was
    `internal error: RuntimeError: Error calling __set_name__ ...`, exit 1 (seen under load,
    Ctrl+C during start-up)."""
    from graphrag_tui import cli

    monkeypatch.setattr(cli, "_run", _interrupt_while_a_class_is_made)
    assert cli.main(["plan"]) == 130
    assert capsys.readouterr() == ("", "graphrag-tui: interrupted\n")


def test_ctrl_c_that_python_only_reports_is_one_line() -> None:
    """Ctrl+C inside importlib's module-lock callback is "Exception ignored in ...", a
    traceback, and the import goes on (seen once in CI, Ctrl+C during start-up). The same
    path, made certain: a finalizer that meets Ctrl+C in the graphrag-tui process."""
    script = (
        "import sys; sys.argv[0] = 'graphrag-tui'\n"
        "import graphrag_tui.cli\n"
        "class Finalized:\n"
        "    def __del__(self): raise KeyboardInterrupt\n"
        "Finalized()\n"
        "print('went on')\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, env=clean_env(), timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (130, b"", b"graphrag-tui: interrupted\n")


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs /proc to see the start-up from outside")
def test_ctrl_c_during_start_up_is_one_line(store: Path) -> None:
    """SIGINT at increasing delays once the interpreter runs graphrag-tui's own imports
    (seen from outside: the process has mapped pydantic's compiled core, which the CLI's
    imports load), through opening the store and planning."""
    outcomes = set()
    for step in range(10):
        process = subprocess.Popen(
            [EXECUTABLE, "plan", str(store), QUESTION, "--no-config"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=clean_env(),
        )
        deadline = time.monotonic() + 30
        while not _maps_library(process.pid, "_pydantic_core") and process.poll() is None:
            assert time.monotonic() < deadline
            time.sleep(0.001)
        time.sleep(step * 0.12)  # the rest takes about 0.3 s on an idle machine, 1 s under load
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=30)
        assert b"Traceback" not in stderr and b"KeyboardInterrupt" not in stderr, stderr
        if process.returncode == 130:
            assert (stdout, stderr) == (b"", b"graphrag-tui: interrupted\n")
        else:  # the plan was done before the signal arrived
            assert (process.returncode, stderr) == (0, b""), stderr
            assert stdout.startswith(b"3 summaries in ")
        outcomes.add(process.returncode)
    assert 130 in outcomes



@pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="needs /proc to see the store opened from outside")
def test_ctrl_c_while_the_store_is_read_is_an_interrupt_not_a_bad_store(tmp_path: Path) -> None:
    """Ctrl+C lands in a function SQLite calls per row (the store's checks at open, the
    planning read): SQLite turned it into "user-defined function raised exception", which
    was said as a bad store, exit 2."""
    import sqlite3

    from graphrag_tui.store.schema import SCHEMA_SQL

    store = tmp_path / "many.db"
    conn = sqlite3.connect(store)
    conn.executescript(SCHEMA_SQL)
    conn.executemany("INSERT INTO rag_community_summaries (id, namespace, summary_content, level) "
                     "VALUES (?, 'ns', 'The harbour keeps a ledger.', 0)", ((f"ns/{i}",) for i in range(400_000)))
    conn.commit()
    conn.close()
    for delay in (0.0, 0.1, 0.4):  # from the store's opening (its checks) into planning's read
        process = subprocess.Popen([EXECUTABLE, "plan", str(store), QUESTION, "--no-config"], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=clean_env())
        deadline = time.monotonic() + 30
        while not _has_open(process.pid, store):
            assert time.monotonic() < deadline and process.poll() is None
            time.sleep(0.001)
        time.sleep(delay)
        process.send_signal(signal.SIGINT)
        assert process.communicate(timeout=30) == (b"", b"graphrag-tui: interrupted\n")
        assert process.returncode == 130


def _has_open(pid: int, path: Path) -> bool:
    try:
        return any(os.readlink(f"/proc/{pid}/fd/{fd}") == str(path) for fd in os.listdir(f"/proc/{pid}/fd"))
    except OSError:  # (a descriptor closed while it was looked at)
        return False

LONG_NAME = "c" * 300  # one path component over the 255 bytes a file name may have


@pytest.mark.parametrize(("args", "env"), [
    (["plan", "{store}", "who pays?", "--prompts", "{long}"], {}),
    (["plan", "{store}", "who pays?"], {"GRAPHRAG_TUI_PROMPTS": "{long}"}),
    (["prompts", "export", "{long}"], {}),
    (["runs", "list"], {"XDG_CONFIG_HOME": "{long}"}),
], ids=["prompts-flag", "prompts-variable", "prompts-export", "config-home"])
def test_a_path_component_too_long_is_one_line(tmp_path: Path, args: list[str], env: dict[str, str]) -> None:
    """Python 3.11's Path.exists() and is_dir() raise ENAMETOOLONG: it was an internal error."""
    store, long = three_leaves(tmp_path / "harbour.db"), str(tmp_path / LONG_NAME)
    run = run_cli(*[a.format(store=store, long=long) for a in args],
                  env=clean_env(**{k: v.format(long=long) for k, v in env.items()}))
    assert (run.code, run.stdout) == (2, "")
    shown = f"{tmp_path}/{LONG_NAME}"
    assert run.stderr.startswith("graphrag-tui: error: cannot use ")
    assert run.stderr.endswith(": File name too long\n") and run.stderr.count("\n") == 1
    assert run.stderr.removeprefix("graphrag-tui: error: cannot use ").startswith(shown[:150])


def test_an_output_that_cannot_be_written_is_one_line_not_an_internal_error(tmp_path: Path) -> None:
    """A full disk (/dev/full) was `internal error: OSError`, and an output closed from the
    start an AttributeError of the error handler itself (found by a probe)."""
    sample = Path(__file__).resolve().parent.parent / "sample_db" / "sample.db"
    history = tmp_path / "history.db"
    with open("/dev/full", "w") as full:
        query = subprocess.run([EXECUTABLE, "query", str(sample), "bridge", "--namespace", "harbor-city", "--json",
                                "--history", str(history)], stdout=full, stderr=subprocess.PIPE, text=True,
                               env=clean_env(), timeout=60)
    assert (query.returncode, query.stderr.splitlines()[-1]) == (
        2, "graphrag-tui: error: cannot write the output: No space left on device")
    listed = run_cli("runs", "list", "--json", "--history", str(history))
    assert [run["status"] for run in listed.json["runs"]] == ["completed"]  # (the run itself is kept)
    closed = subprocess.run([EXECUTABLE, "info", str(sample)], stderr=subprocess.PIPE, text=True, env=clean_env(),
                            timeout=60, preexec_fn=lambda: os.close(1))
    assert (closed.returncode, closed.stderr) == (
        2, "graphrag-tui: error: cannot write the output: standard output is closed\n")
