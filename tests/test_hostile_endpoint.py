"""The CLI against a hostile OpenAI-compatible server on 127.0.0.1 (issue 9: the endpoint).

Each test runs the real `graphrag-tui` command against the scripted server and checks exact
exit codes and outputs: the API key never shows, in any form; no reply aborts a run or
fills memory; bad base URLs and keys are one-line input errors before any request.
"""

from __future__ import annotations

import itertools
import json
import socketserver
import subprocess
import sys
import threading
import time
import unicodedata
from pathlib import Path
from typing import Any

import pytest

from tests.chat_server import Received, Reply, Scripted, ScriptedChatServer, completion, map_reply, reduce_reply
from tests.cli_runner import EXECUTABLE, Run, clean_env, run_cli
from tests.stores import three_leaves

QUESTION = "Who funds the bridge?"
ONE_BATCH_EACH = ["--map-budget", "330", "--map-reserve", "0", "--no-shuffle", "--no-config"]
KEY = "sk-test/SECRET+4242"
DEEP = "[" * 3000 + "]" * 3000
CAP_MESSAGE = "the response to POST /chat/completions passed the {}-byte cap (--max-response-bytes); stopped reading it"


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return three_leaves(tmp_path / "harbour.db")


def query(store: Path, server: ScriptedChatServer, *extra: str, env: dict[str, str] | None = None, **kw: Any) -> Run:
    return run_cli(
        "query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1", *ONE_BATCH_EACH, "--json",
        *extra, env=env, **kw,
    )


def attempts_without_times(batch: dict[str, Any]) -> list[dict[str, Any]]:
    return [{k: v for k, v in a.items() if k not in ("started_at", "duration_s")} for a in batch["attempts"]]


# -- 1. a key that cannot go in a header ------------------------------------------------


@pytest.mark.parametrize("key", ["sk-abc\r", "sk-a\nb", " sk-abc", "sk-abc ", "sk-a b", "sk-a\tb", "sk-é", "sk-\x7f"])
def test_a_key_with_a_control_character_space_or_non_ascii_is_exit_2_before_any_request(
    store: Path, tmp_path: Path, key: str
) -> None:
    events = tmp_path / "events.jsonl"
    with ScriptedChatServer(Scripted({})) as server:
        run = query(store, server, "--api-key-env", "MY_GATEWAY_KEY", "--events", str(events),
                    env=clean_env(MY_GATEWAY_KEY=key))
        assert server.requests == []
    assert (run.code, run.stdout) == (2, "")
    assert run.stderr == (
        "graphrag-tui: error: the environment variable MY_GATEWAY_KEY holds an API key with a space, a control "
        "character (such as a trailing newline) or a non-ASCII character: remove it\n"
    )
    assert "abc" not in run.stderr and "sk-" not in run.stderr and "é" not in run.stderr
    assert not events.exists() or "sk-" not in events.read_text()


# -- 2. a server that echoes the key, whatever the status ---------------------------------


def escaped(text: str) -> str:
    """Every character as a JSON backslash-u escape, in upper-case hex."""
    return "".join(f"\\u{ord(ch):04X}" for ch in text)


def percent(text: str) -> str:
    return "".join(f"%{b:02x}" for b in text.encode())


def echo(template: str, status: int = 200, whole_body: bool = False):
    """A reply that fills in the Authorization header it received (`{auth}`) and the key
    in it as JSON escapes (`{escaped}`) and percent-encoded (`{percent}`)."""

    def reply(received: Received) -> Reply:
        auth = received.headers["authorization"]
        key = auth.removeprefix("Bearer ")
        text = template.replace("{auth}", auth).replace("{escaped}", escaped(key)).replace("{percent}", percent(key))
        return Reply(text if whole_body else completion(text), status=status)

    return reply


def test_the_key_echoed_in_any_reply_and_any_form_is_masked_everywhere(store: Path, tmp_path: Path) -> None:
    attempts = {
        "ns/1": [echo('{"error": "{auth}"}', status=401, whole_body=True), echo("I refuse, {auth}")],
        "ns/2": [echo("<html>{auth}</html>", whole_body=True), echo('{"answer": "plain {auth}", "usefulness": 90}')],
        "ns/3": [echo('{"answer": "escaped {escaped} percent {percent}", "usefulness": 80}')],
    }
    calls: dict[str, int] = {}

    def script(received: Received) -> Reply:
        if received.stage == "reduce":
            return echo('{"answer": "reduced {escaped}"}')(received)
        community = next(c for c in attempts if f"[Community ID: {c} |" in received.prompt)
        n = calls[community] = calls.get(community, 0) + 1
        return attempts[community][n - 1](received)

    events = tmp_path / "events.jsonl"
    with ScriptedChatServer(script) as server:
        run = query(store, server, "--api-key-env", "MY_GATEWAY_KEY", "--events", str(events),
                    env=clean_env(MY_GATEWAY_KEY=KEY))
        assert {r.headers["authorization"] for r in server.requests} == {f"Bearer {KEY}"}
    assert run.code == 0, run.stderr
    result = run.json
    events_text = events.read_text()
    for text in (run.stdout, run.stderr, events_text):
        for form in ("SECRET", "sk-test\\/", "\\u0053\\u0045\\u0043", "\\\\u0053\\\\u0045\\\\u0043", "%53%45%43"):
            assert form not in text
    one, two, three = result["batches"]
    assert [(a["error_kind"], a["error"], a["raw_response"]) for a in one["attempts"]] == [
        ("http", 'HTTP 401: {"error": "Bearer ***"}', '{"error": "Bearer ***"}'),
        ("invalid_json", one["attempts"][1]["error"], "I refuse, Bearer ***"),
    ]
    assert "I refuse, Bearer ***" in one["attempts"][1]["error"]
    assert [(a["error_kind"], a["error"], a["raw_response"]) for a in two["attempts"]] == [
        ("invalid_json", "response body is not JSON", "<html>Bearer ***</html>"),
        (None, None, '{"answer": "plain Bearer ***", "usefulness": 90}'),
    ]
    assert [(a["error_kind"], a["raw_response"]) for a in three["attempts"]] == [
        (None, '{"answer": "escaped *** percent ***", "usefulness": 80}')
    ]
    assert (two["answer"], three["answer"]) == ("plain Bearer ***", "escaped *** percent ***")
    assert (result["status"], result["answer"]) == ("partial", "reduced ***")
    failed = sorted(e["error"] for e in map(json.loads, events_text.splitlines()) if e["type"] == "attempt_failed")
    assert failed == sorted(
        ['HTTP 401: {"error": "Bearer ***"}', one["attempts"][1]["error"], "response body is not JSON"]
    )


def shown(text: str) -> str:
    """The text as a terminal shows it: without the characters it shows as nothing."""
    return "".join(ch for ch in text if unicodedata.category(ch) not in ("Cf", "Zl", "Zp"))


def test_the_key_with_invisible_characters_inside_is_masked_in_every_output_and_the_history(
    store: Path, tmp_path: Path
) -> None:
    """A bidi override inside the echoed key is removed for the terminal, a zero-width
    space shows as nothing: either way the screen would show the key."""

    def script(received: Received) -> Reply:
        key = received.headers["authorization"].removeprefix("Bearer ")
        if received.stage == "reduce":
            return reduce_reply(f"reduced {key[:7]}\u2066{key[7:]}")
        if "[Community ID: ns/1 |" in received.prompt:
            return Reply(json.dumps({"error": f"bad key {key[:8]}\u202e{key[8:]}"}, ensure_ascii=False), status=500)
        return map_reply(f"the key is {key[:3]}\u200b{key[3:]}", 90)

    history = tmp_path / "history.db"
    with ScriptedChatServer(script) as server:
        run = run_cli("query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1", *ONE_BATCH_EACH,
                      "--api-key-env", "MY_GATEWAY_KEY", "--history", str(history), env=clean_env(MY_GATEWAY_KEY=KEY))
    assert run.code == 0, run.stderr
    (run_id,) = [line.split()[-1] for line in run.stdout.splitlines() if line.startswith("run ")]
    shown_run = run_cli("runs", "show", run_id, "--history", str(history), "--no-config")
    as_json = run_cli("runs", "show", run_id, "--history", str(history), "--no-config", "--json")
    assert (shown_run.code, as_json.code) == (0, 0), shown_run.stderr + as_json.stderr
    result = as_json.json
    assert (result["status"], result["answer"]) == ("partial", "reduced ***")
    assert [b["answer"] for b in result["batches"]] == [None, "the key is ***", "the key is ***"]
    assert result["batches"][0]["attempts"][0]["raw_response"] == '{"error": "bad key ***"}'
    for text in (run.stdout, run.stderr, shown_run.stdout, as_json.stdout, history.read_bytes().decode("latin-1")):
        assert "SECRET" not in shown(text)


def test_credentials_given_as_extra_headers_or_body_fields_are_masked_as_the_key_is(store: Path, tmp_path: Path) -> None:
    """A gateway's key sent as `X-Api-Key`, a bearer token in `Authorization` itself, and a
    token among the body's fields, echoed by a server that refused them, were shown and
    recorded whole (found by a probe). A header that is no credential stays as it is."""
    gateway, bearer, body_token = "gw-SECRET-0123456789", "bearer-SECRET-0123456789", "body-SECRET-0123456789"

    def script(received: Received) -> Reply:
        echoed = (f"{received.headers['x-api-key']} {received.headers['authorization']} "
                  f"{received.json['auth']['token']} {received.headers['x-title']}")
        if received.stage == "reduce":
            return reduce_reply(f"reduced {echoed}")
        if "[Community ID: ns/1 |" in received.prompt:
            return Reply(json.dumps({"error": f"refused {echoed}"}), status=401)
        return map_reply("Bridge.", 90)

    history = tmp_path / "history.db"
    with ScriptedChatServer(script) as server:
        run = run_cli("query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1", *ONE_BATCH_EACH,
                      "--header", f"X-Api-Key: {gateway}", "--header", f"Authorization: Bearer {bearer}",
                      "--header", "X-Title: Harbour analyst desk", "--extra-body", json.dumps({"auth": {"token": body_token}}),
                      "--history", str(history), "--json")
    assert run.code == 0, run.stderr
    assert run.json["answer"] == "reduced *** *** *** Harbour analyst desk"
    assert run.json["batches"][0]["attempts"][0]["raw_response"] == '{"error": "refused *** *** *** Harbour analyst desk"}'
    shown_run = run_cli("runs", "show", run.json["run_id"], "--history", str(history), "--no-config", "--json")
    assert shown_run.json["answer"] == run.json["answer"]
    for text in (run.stdout, run.stderr, shown_run.stdout, history.read_bytes().decode("latin-1")):
        assert "SECRET" not in text


# -- 3. a reply nested 3,000 levels deep ------------------------------------------------------


def test_a_key_with_both_quotes_echoed_in_a_bad_status_line_is_masked(store: Path, tmp_path: Path) -> None:
    """httpx quotes a malformed status line as bytes, Python's repr: a key holding both
    quotes came out as `sk-Q"uo\\'te...` in every output and the history."""
    key = "sk-Q\"uo'te0SECRET0123456789"

    class StatusLineEcho(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            self.request.recv(65536)
            self.request.sendall(b"HTTP/1.1 2x0 " + key.encode() + b"\r\n\r\n")

    history, events = tmp_path / "history.db", tmp_path / "events.jsonl"
    with socketserver.ThreadingTCPServer(("127.0.0.1", 0), StatusLineEcho) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        runs = [run_cli("query", str(store), QUESTION, "--base-url", url, "--model", "m1", *ONE_BATCH_EACH,
                        "--api-key-env", "MY_KEY", "--history", str(history), "--events", str(events), *form,
                        env=clean_env(MY_KEY=key)) for form in ([], ["--json"])]
        server.shutdown()
    assert [run.code for run in runs] == [1, 1]
    assert "batch 0: transport: RemoteProtocolError: illegal status line: bytearray(b'HTTP/1.1 2x0 ***')" \
        in runs[0].stdout
    written = [run.stdout + run.stderr for run in runs] + [events.read_text(), history.read_bytes().decode("latin-1")]
    for text in written:
        assert "SECRET" not in text



@pytest.mark.parametrize("form", ["reason", "utf-16", "controls"])
def test_a_key_echoed_in_the_status_reason_in_utf_16_or_between_control_characters_is_masked(
        store: Path, tmp_path: Path, form: str) -> None:
    """`-v` logged httpx's request line, which quotes the server's reason phrase, with the
    key in it; a body in UTF-16 (a NUL between the key's characters), or with DEL or an ANSI
    sequence between them, showed the key readable between `␀`s in every output and the
    history."""
    key = "sk-test-SECRET0123456789"

    class Echo(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            self.request.recv(65536)
            auth = f"Bearer {key}"
            if form == "reason":
                head, body = f"HTTP/1.1 401 Bad {auth}\r\n".encode(), b"denied"
            elif form == "utf-16":
                head, body = b"HTTP/1.1 401 Unauthorized\r\n", f"auth was: {auth}".encode("utf-16-le")
            else:
                head, body = b"HTTP/1.1 401 Unauthorized\r\n", ("\x7f".join(auth[:12]) + "\x1b[0m" + auth[12:]).encode()
            self.request.sendall(head + b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)

    history = tmp_path / "history.db"
    with socketserver.ThreadingTCPServer(("127.0.0.1", 0), Echo) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        run = run_cli("query", str(store), QUESTION, "--base-url", url, "--model", "m1", *ONE_BATCH_EACH,
                      "--api-key-env", "MY_KEY", "--history", str(history), "-v", env=clean_env(MY_KEY=key))
        server.shutdown()
    assert run.code == 1, run.stderr
    if form == "reason":
        assert '"HTTP/1.1 401 Bad Bearer ***"' in run.stderr
    else:
        assert "***" in run.stdout
    for text in (run.stdout, run.stderr, history.read_bytes().decode("utf-16-le", "replace"),
                 history.read_bytes().decode("latin-1")):
        assert "SECRET" not in "".join(ch for ch in text if ch.isalnum())

def test_a_deeply_nested_completion_body_is_an_invalid_attempt_that_is_retried(store: Path) -> None:
    script = Scripted({
        "ns/1": [Reply(DEEP), map_reply("The port authority funds the bridge.", 90)],
        "ns/2": Reply('{"choices": ' + DEEP + "}"),
        "ns/3": map_reply("", 0),
    })
    with ScriptedChatServer(script) as server:
        run = query(store, server)
    assert run.code == 0, run.stderr
    result = run.json
    assert result["status"] == "partial"
    one, two, _ = result["batches"]
    assert [(a["error_kind"], a["error"], a["raw_response"] == DEEP) for a in one["attempts"]] == [
        ("invalid_json", "response body is nested too deeply to parse", True),
        (None, None, False),
    ]
    assert (one["status"], one["answer"]) == ("succeeded", "The port authority funds the bridge.")
    assert [(a["error_kind"], a["error"]) for a in two["attempts"]] == [
        ("invalid_json", "response body is nested too deeply to parse")
    ] * 2
    assert two["status"] == "failed"


def test_a_deeply_nested_model_list_is_exit_2_in_one_line(store: Path) -> None:
    with ScriptedChatServer(Scripted({}), models_script=lambda r: Reply('{"data": ' + DEEP + "}")) as server:
        run = run_cli("query", str(store), QUESTION, "--base-url", server.base_url, *ONE_BATCH_EACH, "--json")
        assert [r.path for r in server.requests] == ["/v1/models"]
    assert (run.code, run.stdout) == (2, "")
    assert run.stderr == (
        f"graphrag-tui: error: --model was not given and GET {server.base_url}/models failed "
        "(response body is nested too deeply to parse): name a model with --model\n"
    )


# -- 9. responses are read as a stream with a size cap ------------------------------------


def test_a_body_over_the_cap_fails_the_attempt_as_response_too_large(store: Path) -> None:
    big = map_reply("x" * 5000, 50)
    script = Scripted({"ns/1": big, "ns/2": map_reply("The port authority funds it.", 80), "ns/3": map_reply("", 0)})
    with ScriptedChatServer(script) as server:
        run = query(store, server, "--max-response-bytes", "1000")
    assert run.code == 0, run.stderr
    result = run.json
    assert result["status"] == "partial"
    expected = {"error_kind": "response_too_large", "error": CAP_MESSAGE.format(1000), "raw_response": None}
    assert attempts_without_times(result["batches"][0]) == [
        {"attempt": 1, **expected, **extra(result)}, {"attempt": 2, **expected, **extra(result)}
    ]
    assert result["batches"][0]["status"] == "failed"


@pytest.mark.parametrize("source", ["config", "environment"])
def test_the_size_cap_also_comes_from_the_config_file_or_the_environment(
    store: Path, tmp_path: Path, source: str
) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[model]\nmax_response_bytes = 1000\n" if source == "config" else "")
    env = clean_env(GRAPHRAG_TUI_MAX_RESPONSE_BYTES="1000") if source == "environment" else clean_env()
    script = Scripted({"ns/1": map_reply("x" * 5000, 50), "ns/2": map_reply("Bridge.", 80), "ns/3": map_reply("", 0)})
    with ScriptedChatServer(script) as server:
        run = run_cli("query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1", "--config",
                      str(config), "--map-budget", "330", "--map-reserve", "0", "--no-shuffle", "--json", env=env)
    assert run.code == 0, run.stderr
    assert [a["error"] for a in run.json["batches"][0]["attempts"]] == [CAP_MESSAGE.format(1000)] * 2


@pytest.mark.parametrize("value", ["0", "-5", "abc", "1e6", "\u00b2", "", "1099511627777", "9223372036854775807",
                                   "99999999999999999999999"])
def test_a_bad_size_cap_is_exit_2_in_one_line(store: Path, value: str) -> None:
    """(A cap of 2**63 - 1 or more was taken, then failed every compressed reply as an internal error.)"""
    run = run_cli("query", str(store), QUESTION, "--base-url", "http://127.0.0.1:9/v1", "--model", "m1",
                  "--max-response-bytes", value, *ONE_BATCH_EACH, "--json")
    assert (run.code, run.stdout) == (2, "")
    must = "be at most 1099511627776 bytes (1 TiB)" if len(value) > 12 else "be a positive whole number of bytes"
    assert run.stderr == f"graphrag-tui: error: --max-response-bytes must {must}, got {value!r}\n"


def extra(result: dict[str, Any]) -> dict[str, Any]:
    """The attempt fields beyond SPEC §5's that this result carries (raw_response_bytes, usage)."""
    attempt = result["batches"][0]["attempts"][0]
    return {name: None for name in ("raw_response_bytes", "usage") if name in attempt}


def run_measured(*args: str, timeout: float) -> tuple[Run, int]:
    """The CLI run as a child of a fresh Python, and that child's peak RSS in KiB."""
    code = (
        "import resource, subprocess, sys\n"
        "done = subprocess.run(sys.argv[1:], capture_output=True, stdin=subprocess.DEVNULL)\n"
        "sys.stderr.buffer.write(done.stderr)\n"
        "sys.stdout.buffer.write(done.stdout)\n"
        "sys.stderr.write('\\npeak-rss-kib %d\\n' % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
        "sys.exit(done.returncode)\n"
    )
    done = subprocess.run([sys.executable, "-c", code, EXECUTABLE, *args], capture_output=True, text=True,
                          env=clean_env(), timeout=timeout)
    stderr, _, peak = done.stderr.rpartition("\npeak-rss-kib ")
    return Run(done.returncode, done.stdout, stderr), int(peak)


def test_a_never_ending_chunked_body_stops_at_the_default_cap_with_bounded_memory(store: Path) -> None:
    forever = Reply(chunks=lambda: itertools.repeat(b"x" * 65536))
    script = Scripted({"ns/1": forever, "ns/2": forever, "ns/3": forever})
    with ScriptedChatServer(script) as server:
        started = time.monotonic()
        run, peak_kib = run_measured(
            "query", str(store), QUESTION, "--base-url", server.base_url, "--model", "m1", *ONE_BATCH_EACH,
            "--json", timeout=60,
        )
        elapsed = time.monotonic() - started
    assert run.code == 1, run.stderr
    result = run.json
    assert result["status"] == "failed"
    for batch in result["batches"]:
        assert [(a["error_kind"], a["error"]) for a in batch["attempts"]] == [
            ("response_too_large", CAP_MESSAGE.format(8388608))
        ] * 2
    assert elapsed < 30
    # Three batches read at most 8 MiB each at a time; the CLI alone is about 50 MB.
    assert peak_kib < 200 * 1024, peak_kib


def test_undecodable_bytes_in_a_reply_become_replacement_characters(store: Path) -> None:
    body = json.dumps(completion(json.dumps({"answer": "caf__", "usefulness": 90}))).encode()
    raw = Reply(raw=body.replace(b"__", b"\xff\xfe"))
    script = Scripted({"ns/1": raw, "ns/2": map_reply("", 0), "ns/3": map_reply("", 0)},
                      reduce=Reply(raw=json.dumps(completion('{"answer": "ok__"}')).encode().replace(b"__", b"\xc3")))
    with ScriptedChatServer(script) as server:
        run = query(store, server)
    assert run.code == 0, run.stderr
    result = run.json
    assert result["batches"][0]["answer"] == "caf\ufffd\ufffd"
    assert result["answer"] == "ok\ufffd"


# -- 7. malformed base URLs -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://127.0.0.1:99999/v1", "--base-url has port 99999, out of the range 1-65535"),
        ("http://127.0.0.1:0/v1", "--base-url has port 0, out of the range 1-65535"),
        ("http://127.0.0.1:-1/v1", "--base-url has port -1, out of the range 1-65535"),
        ("http://127.0.0.1:port/v1", "--base-url is not a valid URL"),
        ("http://[::1/v1", "--base-url is not a valid URL"),
        ("http://exa mple.com/v1", "--base-url has an invalid host: 'exa%20mple.com'"),
        # (punycode httpx cannot decode: idna's errors were internal errors)
        ("http://xn--/v1", "--base-url has an invalid host: 'xn--'"),
        ("http://xn--a-ecp.ru/v1", "--base-url has an invalid host: 'xn--a-ecp.ru'"),
        ("http:///v1", "--base-url must be an http:// or https:// URL with a host"),
        ("ftp://127.0.0.1/v1", "--base-url must be an http:// or https:// URL with a host"),
    ],
)
def test_a_malformed_base_url_is_exit_2_in_one_line(store: Path, url: str, message: str) -> None:
    for model in (["--model", "m1"], []):
        run = run_cli("query", str(store), QUESTION, "--base-url", url, *model, *ONE_BATCH_EACH, "--json")
        assert (run.code, run.stdout, run.stderr) == (2, "", f"graphrag-tui: error: {message}\n")


# -- 10. the base URL's query string ------------------------------------------------------------


def test_the_base_url_query_string_stays_after_the_endpoint_path(store: Path) -> None:
    script = Scripted({"ns/1": map_reply("Bridge.", 90), "ns/2": map_reply("", 0), "ns/3": map_reply("", 0)},
                      reduce=reduce_reply("The port authority."))
    with ScriptedChatServer(script) as server:
        url = server.base_url + "?api-version=2024-01-01"
        run = run_cli("query", str(store), QUESTION, "--base-url", url, *ONE_BATCH_EACH, "--json")
        paths = [(r.method, r.path) for r in server.requests]
    assert run.code == 0, run.stderr
    assert run.json["answer"] == "The port authority."
    assert paths == [("GET", "/v1/models?api-version=2024-01-01")] + [
        ("POST", "/v1/chat/completions?api-version=2024-01-01")
    ] * 4


def test_a_credential_in_the_base_url_query_string_is_not_recorded(store: Path, tmp_path: Path) -> None:
    """`?key=...` was kept in the history's model settings, plain, while every output left
    it out (found by a probe). The history keeps the rest of the query; a re-run sends that."""
    script = Scripted({"ns/1": map_reply("Bridge.", 90), "ns/2": map_reply("", 0), "ns/3": map_reply("", 0)},
                      reduce=reduce_reply("The port authority."))
    history = tmp_path / "history.db"
    with ScriptedChatServer(script) as server:
        url = server.base_url + "?api-version=2024-01-01&key=sk-SECRET-QS&access_token=SECRET-TOKEN"
        run = run_cli("query", str(store), QUESTION, "--base-url", url, "--model", "m1", *ONE_BATCH_EACH, "--json",
                      "--history", str(history))
        assert run.code == 0, run.stderr
        recorded = b"".join(path.read_bytes() for path in tmp_path.iterdir() if path.name.startswith("history.db"))
        assert b"SECRET" not in recorded and b"api-version=2024-01-01" in recorded
        again = run_cli("rerun", run.json["run_id"], "--all", "--history", str(history), "--json")
        assert again.code == 0, again.stderr
        paths = {r.path for r in server.requests[5:] if r.method == "POST"}
    assert paths == {"/v1/chat/completions?api-version=2024-01-01"}
