"""Model settings end to end: sampling and request fields, extra headers and body, Azure URL
and key-header forms, --api-key-header, TLS trust and redirects; from flags, the config file
and GRAPHRAG_TUI_* variables alike (issue 12: model settings). The real `graphrag-tui`
command against the scripted server on 127.0.0.1."""

from __future__ import annotations

import base64
import json
import os
import shutil
import ssl
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from graphrag_tui.models.azure import classic_deployment, takes_api_key_header
from tests.chat_server import Received, Reply, Scripted, ScriptedChatServer, map_reply
from tests.cli_runner import clean_env, run_cli
from tests.stores import three_leaves

QUESTION = "Who funds the bridge?"
ONE_BATCH_EACH = ["--map-budget", "330", "--map-reserve", "0", "--no-shuffle"]
MAPS = {"ns/1": map_reply("The port authority funds it.", 80), "ns/2": map_reply("", 0), "ns/3": map_reply("", 0)}
KEY = "sk-test-SECRET-0123456789"


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return three_leaves(tmp_path / "harbour.db")


def query(store: Path, base_url: str, *extra: str, env: dict[str, str] | None = None) -> Any:
    return run_cli("query", str(store), QUESTION, "--base-url", base_url, *ONE_BATCH_EACH, "--json", *extra, env=env)


def test_sampling_fields_headers_and_extra_body_from_flags(store: Path) -> None:
    with ScriptedChatServer(Scripted(MAPS)) as server:
        run = query(store, server.base_url, "--model", "m1", "--no-config", "--temperature", "0.2", "--top-p", "0.9",
                    "--model-seed", "7", "--reasoning-effort", "low", "--header", "X-Team: search",
                    "--header", "X-Trace:  on ", "--extra-body", '{"service_tier": "flex", "user": "u1"}')
        first = server.chat_requests()[0]
    assert run.code == 0, run.stderr
    body = first.json
    assert {k: body[k] for k in ("temperature", "top_p", "seed", "reasoning_effort", "service_tier", "user")} == {
        "temperature": 0.2, "top_p": 0.9, "seed": 7, "reasoning_effort": "low", "service_tier": "flex", "user": "u1"
    }
    assert (first.headers["x-team"], first.headers["x-trace"]) == ("search", "on")
    assert run.json["seed"] is None  # --model-seed is not the shuffle's seed (--no-shuffle here)


def test_the_same_settings_from_the_config_file_and_the_environment_flags_winning(store: Path, tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        '[model]\nmodel = "m1"\ntemperature = 0.5\ntop_p = 0.5\nmodel_seed = 1\nreasoning_effort = "high"\n'
        'max_tokens_field = "max_completion_tokens"\n'
        '[model.headers]\nX-Team = "config"\nX-Other = "kept"\n'
        '[model.extra_body]\nservice_tier = "flex"\n',
        encoding="utf-8",
    )
    env = clean_env(GRAPHRAG_TUI_TOP_P="0.25", GRAPHRAG_TUI_HEADERS='{"X-Team": "environment"}',
                    GRAPHRAG_TUI_MODEL_SEED="3")
    with ScriptedChatServer(Scripted(MAPS)) as server:
        run = query(store, server.base_url, "--config", str(config), "--temperature", "1", "--map-reserve", "64",
                    "--map-budget", "400", env=env)
        first = server.chat_requests()[0]
    assert run.code == 0, run.stderr
    body = first.json
    assert {k: body.get(k) for k in ("model", "temperature", "top_p", "seed", "reasoning_effort", "service_tier",
                                     "max_completion_tokens", "max_tokens")} == {
        "model": "m1", "temperature": 1.0, "top_p": 0.25, "seed": 3, "reasoning_effort": "high",
        "service_tier": "flex", "max_completion_tokens": 64, "max_tokens": None,
    }
    # the variable's table replaces the file's (a variable is one value), and the flags add to it
    assert first.headers["x-team"] == "environment" and "x-other" not in first.headers


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--temperature", "3"], "--temperature must be a number from 0 to 2, got '3'"),
        (["--top-p", "x"], "--top-p must be a number from 0 to 1, got 'x'"),
        (["--model-seed", "1.5"], "--model-seed must be a whole number (a 64-bit integer), got '1.5'"),
        (["--reasoning-effort", "LOUD!"], "--reasoning-effort must be a word such as minimal, low, medium or high, "
                                          "got 'LOUD!'"),
        (["--header", "no colon"], "--header must be NAME: VALUE, got 'no colon'"),
        (["--header", "Bad Name: x"], "--header: a header name must be a header name (letters, digits and "
                                      "!#$%&'*+-.^_`|~), got 'Bad Name'"),
        (["--header", "Content-Type: text/plain"], "--header cannot set Content-Type: the client sets it"),
        (["--header", "X-A: a\u00e9"], "--header: header X-A must be printable ASCII text on one line"),
        (["--extra-body", "[1]"], "--extra-body must be a JSON object, got [1]"),
        (["--extra-body", "{"], "--extra-body must be a JSON object"),
        (["--extra-body", '{"messages": []}'], "--extra-body cannot set 'messages': the client sets it"),
        # these two passed, then failed every request as an internal error
        (["--extra-body", '{"a": "\\ud800"}'], "--extra-body holds text that is not valid Unicode (a lone surrogate)"),
        (["--extra-body", '{"a": ' + "[" * 975 + "]" * 975 + "}"], "--extra-body is nested deeper than 64 levels"),
        # objects all the same, said to be none (found by a probe): deeper than Python's JSON reads, a long number
        (["--extra-body", '{"a": ' + "[" * 1200 + "]" * 1200 + "}"], "--extra-body is nested deeper than 64 levels"),
        (["--extra-body", '{"a": ' + "9" * 5000 + "}"], "--extra-body holds a number of more than 4,300 digits"),
        (["--api-key-header", "a b"], "--api-key-header must be a header name (letters, digits and "
                                      "!#$%&'*+-.^_`|~), got 'a b'"),
        # the key went out as the request's Host; Content-Length failed every request
        (["--api-key-header", "Host"], "--api-key-header cannot be Host: the client sets it"),
        (["--api-key-header", "content-length"], "--api-key-header cannot be content-length: the client sets it"),
    ],
)
def test_a_bad_request_setting_is_exit_2_in_one_line_before_any_request(
    store: Path, args: list[str], message: str
) -> None:
    with ScriptedChatServer(Scripted(MAPS)) as server:
        run = query(store, server.base_url, "--model", "m1", "--no-config", *args)
        assert server.requests == []
    assert (run.code, run.stdout) == (2, "")
    assert run.stderr == f"graphrag-tui: error: {message}\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[model]\ntemperature = true\n", "[model] temperature must be a number from 0 to 2, got True"),
        ("[model.headers]\nHost = \"x\"\n", "[model] headers cannot set Host: the client sets it"),
        ("[model]\nextra_body = 3\n", "[model] extra_body must be a table (a JSON object) of body fields"),
        ("[model]\nmax_tokens_field = \"tokens\"\n",
         "[model] max_tokens_field must be one of auto, max_tokens, max_completion_tokens, got 'tokens'"),
        # a check whose message puts a colon after the setting's name (it showed a stray ␀ there)
        ("[model.headers]\nX-A = \"a\\r\\nb\"\n", "[model] headers: header X-A must be printable ASCII text on one line"),
        ("[model.headers]\n\"Bad Name\" = \"x\"\n", "[model] headers: a header name must be a header name (letters, "
         "digits and !#$%&'*+-.^_`|~), got 'Bad Name'"),
    ],
)
def test_a_bad_setting_in_the_config_file_names_its_key(store: Path, tmp_path: Path, text: str, message: str) -> None:
    config = tmp_path / "config.toml"
    config.write_text(text, encoding="utf-8")
    run = run_cli("plan", str(store), QUESTION, "--config", str(config))
    assert (run.code, run.stdout) == (2, "")
    assert run.stderr == f"graphrag-tui: error: config file {config}: {message}\n"


def test_a_bad_headers_variable_names_the_variable(store: Path) -> None:
    run = run_cli("plan", str(store), QUESTION, env=clean_env(GRAPHRAG_TUI_HEADERS="[1]"))
    assert (run.code, run.stderr) == (2, "graphrag-tui: error: GRAPHRAG_TUI_HEADERS must be a JSON object, got [1]\n")
    run = run_cli("plan", str(store), QUESTION, env=clean_env(GRAPHRAG_TUI_HEADERS='{"Bad Name": "x"}'))
    assert (run.code, run.stderr) == (2, "graphrag-tui: error: GRAPHRAG_TUI_HEADERS: a header name must be a header "
                                         "name (letters, digits and !#$%&'*+-.^_`|~), got 'Bad Name'\n")


# -- Azure and the key header ---------------------------------------------------------------


def test_azure_classic_deployment_url_keeps_api_version_and_sends_the_key_as_api_key(store: Path) -> None:
    with ScriptedChatServer(Scripted(MAPS)) as server:
        root = server.base_url.removesuffix("/v1")
        url = f"{root}/openai/deployments/gpt4o-prod?api-version=2024-10-21"
        run = query(store, url, "--no-config", "--api-key-env", "AZ_KEY", env=clean_env(AZ_KEY=KEY))
        requests = list(server.requests)
    assert run.code == 0, run.stderr
    # no GET /models: the deployment names the model
    assert [(r.method, r.path) for r in requests][:1] == [
        ("POST", "/openai/deployments/gpt4o-prod/chat/completions?api-version=2024-10-21")
    ]
    assert all(r.path.endswith("?api-version=2024-10-21") for r in requests)
    assert {r.json["model"] for r in requests} == {"gpt4o-prod"}
    assert {r.headers["api-key"] for r in requests} == {KEY}
    assert not any("authorization" in r.headers for r in requests)
    assert KEY not in run.stdout + run.stderr
    assert "note: gpt4o-prod @ 127.0.0.1:" in run.stderr


def test_azure_classic_url_with_model_given_sends_that_name(store: Path) -> None:
    with ScriptedChatServer(Scripted(MAPS)) as server:
        url = server.base_url.removesuffix("/v1") + "/openai/deployments/dep1?api-version=2024-10-21"
        run = query(store, url, "--no-config", "--model", "gpt-4o")
        models = {r.json["model"] for r in server.chat_requests()}
    assert run.code == 0, run.stderr
    assert models == {"gpt-4o"}


def test_azure_v1_path_posts_under_it(store: Path) -> None:
    with ScriptedChatServer(Scripted(MAPS)) as server:
        url = server.base_url.removesuffix("/v1") + "/openai/v1"
        run = query(store, url, "--no-config", "--model", "dep1", "--api-key-env", "AZ_KEY", env=clean_env(AZ_KEY=KEY))
        paths = {r.path for r in server.chat_requests()}
        auth = {r.headers.get("authorization") for r in server.chat_requests()}
    assert run.code == 0, run.stderr
    assert paths == {"/openai/v1/chat/completions"}
    assert auth == {f"Bearer {KEY}"}  # a loopback host is not Azure's: the usual header


@pytest.mark.parametrize(
    ("url", "api_key", "deployment"),
    [
        ("https://res.openai.azure.com/openai/v1", True, None),
        ("https://RES.OPENAI.AZURE.COM./openai/v1", True, None),
        ("https://res.cognitiveservices.azure.com/openai/v1", True, None),
        ("https://res.services.ai.azure.com/openai/deployments/d1?api-version=1", True, "d1"),
        ("https://gw.example.com/openai/deployments/d-2/?api-version=1", True, "d-2"),
        ("https://api.openai.com/v1", False, None),
        ("https://openai.azure.com.evil.example/v1", False, None),
        ("https://evil.example/v1/openai/deployments/x/chat", False, None),
    ],
)
def test_which_urls_are_azure(url: str, api_key: bool, deployment: str | None) -> None:
    parsed = httpx.URL(url)
    assert (takes_api_key_header(parsed), classic_deployment(parsed)) == (api_key, deployment)


def test_api_key_header_sends_the_key_raw_in_that_header(store: Path) -> None:
    with ScriptedChatServer(Scripted(MAPS)) as server:
        run = query(store, server.base_url, "--model", "m1", "--no-config", "--api-key-env", "GW_KEY",
                    "--api-key-header", "X-Gateway-Key", env=clean_env(GW_KEY=KEY))
        headers = [r.headers for r in server.chat_requests()]
    assert run.code == 0, run.stderr
    assert {h["x-gateway-key"] for h in headers} == {KEY}
    assert not any("authorization" in h or "api-key" in h for h in headers)


def test_a_header_that_would_carry_the_key_twice_is_an_input_error(store: Path, tmp_path: Path) -> None:
    with ScriptedChatServer(Scripted(MAPS)) as server:
        run = query(store, server.base_url, "--model", "m1", "--no-config", "--api-key-env", "GW_KEY",
                    "--header", "Authorization: Basic abc", env=clean_env(GW_KEY=KEY))
        assert server.requests == []
    assert (run.code, run.stderr) == (
        2, "graphrag-tui: error: [model.headers] sets Authorization, the header that carries the API key\n"
    )


# -- the key goes to the configured host only ---------------------------------------------


def test_a_redirect_is_not_followed_so_the_key_never_reaches_another_host(store: Path) -> None:
    with ScriptedChatServer(Scripted(MAPS)) as elsewhere:
        target = elsewhere.base_url + "/chat/completions"
        with ScriptedChatServer(lambda r: Reply("", status=307, headers={"Location": target})) as server:
            run = query(store, server.base_url, "--model", "m1", "--no-config", "--api-key-env", "GW_KEY",
                        env=clean_env(GW_KEY=KEY))
            sent = len(server.chat_requests())
        assert elsewhere.requests == []
    assert run.code == 1
    assert sent == 6
    assert {a["error"] for b in run.json["batches"] for a in b["attempts"]} == {"HTTP 307"}


def test_a_certificate_file_that_cannot_be_read_is_one_line(store: Path, tmp_path: Path) -> None:
    bad = tmp_path / "ca.pem"
    bad.write_text("not a certificate", encoding="utf-8")
    run = query(store, "https://example.invalid/v1", "--model", "m1", "--no-config",
                env=clean_env(SSL_CERT_FILE=str(bad)))
    assert (run.code, run.stdout) == (2, "")
    assert run.stderr.startswith(
        "graphrag-tui: error: the certificate file or directory in SSL_CERT_FILE/SSL_CERT_DIR cannot be used: "
    )
    assert run.stderr.count("\n") == 1


def test_a_certificate_file_that_is_a_fifo_is_one_line_at_once(store: Path, tmp_path: Path) -> None:
    """OpenSSL opened it and waited for a writer, forever."""
    fifo = tmp_path / "ca.pem"
    os.mkfifo(fifo)
    run = run_cli("query", str(store), QUESTION, "--base-url", "https://example.invalid/v1", "--model", "m1",
                  "--no-config", env=clean_env(SSL_CERT_FILE=str(fifo)), timeout=30)
    assert (run.code, run.stdout, run.stderr) == (
        2, "", f"graphrag-tui: error: the certificate file in SSL_CERT_FILE cannot be used: {fifo} is not a regular "
        "file\n")


def test_the_header_names_the_model_and_host(store: Path) -> None:
    from graphrag_tui.models.factory import ModelSettings
    from graphrag_tui.tui.app import describe_model

    classic = ModelSettings(base_url="https://res.openai.azure.com/openai/deployments/dep9?api-version=1")
    assert describe_model(classic) == "dep9 @ res.openai.azure.com"
    assert describe_model(ModelSettings(base_url="http://127.0.0.1:8000/v1", model="m1")) == "m1 @ 127.0.0.1:8000"


# -- TLS and proxies --------------------------------------------------------------------------


def make_certificates(directory: Path) -> tuple[Path, Path, Path]:
    """A test CA and a server certificate it signed for 127.0.0.1 (openssl)."""
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    ca, ca_key = directory / "ca.pem", directory / "ca.key"
    cert, key, csr = directory / "srv.pem", directory / "srv.key", directory / "srv.csr"
    ext = directory / "ext.cnf"
    ext.write_text("subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\n"
                   "extendedKeyUsage=serverAuth\nauthorityKeyIdentifier=keyid\nsubjectKeyIdentifier=hash\n")
    for command in (
        ["req", "-x509", *ec, "-keyout", ca_key, "-out", ca, "-days", "2", "-subj", "/CN=graphrag-tui test CA",
         "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"],
        ["req", *ec, "-keyout", key, "-out", csr, "-subj", "/CN=127.0.0.1"],
        ["x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial", "-out", cert, "-days", "2",
         "-extfile", ext],
    ):
        subprocess.run(["openssl", *map(str, command)], check=True, capture_output=True)
    return ca, cert, key


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
def test_ssl_cert_file_is_trusted_and_nothing_else_is(store: Path, tmp_path: Path) -> None:
    ca, cert, key = make_certificates(tmp_path)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    with ScriptedChatServer(Scripted(MAPS), tls=context) as server:
        assert server.base_url.startswith("https://127.0.0.1:")
        trusted = query(store, server.base_url, "--model", "m1", "--no-config", env=clean_env(SSL_CERT_FILE=str(ca)))
        untrusted = query(store, server.base_url, "--model", "m1", "--no-config",
                          env={k: v for k, v in clean_env().items() if not k.startswith("SSL_CERT")})
    assert trusted.code == 0, trusted.stderr
    assert trusted.json["status"] == "completed"
    assert untrusted.code == 1
    errors = {a["error_kind"] for b in untrusted.json["batches"] for a in b["attempts"]}
    assert errors == {"transport"}
    assert "CERTIFICATE_VERIFY_FAILED" in untrusted.json["batches"][0]["attempts"][0]["error"]


def test_http_proxy_carries_requests_to_a_remote_host_and_no_proxy_bypasses_it(store: Path) -> None:
    # The scripted server is the proxy: it receives each request in absolute form and answers it.
    with ScriptedChatServer(Scripted(MAPS)) as proxy:
        proxy_url = proxy.base_url.removesuffix("/v1")
        run = query(store, "http://api.example.test/v1", "--model", "m1", "--no-config", "--timeout", "5",
                    env=clean_env(HTTP_PROXY=proxy_url))
        paths = {r.path for r in proxy.chat_requests()}
        assert run.code == 0, run.stderr
        assert paths == {"http://api.example.test/v1/chat/completions"}
        before = len(proxy.requests)
        bypass = query(store, "http://api.example.test/v1", "--model", "m1", "--no-config", "--timeout", "5",
                       env=clean_env(HTTP_PROXY=proxy_url, NO_PROXY="example.test"))
        assert len(proxy.requests) == before
    assert bypass.code == 1
    assert {a["error_kind"] for b in bypass.json["batches"] for a in b["attempts"]} <= {"transport", "timeout"}


def test_a_proxy_echoing_its_credentials_has_them_masked(store: Path, tmp_path: Path) -> None:
    """A proxy's error page echoing the request's headers showed (and the history kept) the
    proxy's password as `Proxy-Authorization: Basic <base64 of user:password>`."""
    password = "PROXYPASS-2024"
    basic = base64.b64encode(f"puser:{password}".encode()).decode()

    def echo(request: Received) -> Reply:
        return Reply({"error": {"message": json.dumps(request.headers) + f" password={password}"}}, status=502)

    history = tmp_path / "history.db"
    with ScriptedChatServer(echo) as proxy:
        host = proxy.base_url.removeprefix("http://").removesuffix("/v1")
        run = query(store, "http://api.example.test/v1", "--model", "m1", "--no-config", "--history", str(history),
                    env=clean_env(HTTP_PROXY=f"http://puser:{password}@{host}"))
        assert proxy.requests and proxy.requests[0].headers["proxy-authorization"] == f"Basic {basic}"
    shown = run_cli("runs", "show", run.json["run_id"], "--json", "--history", str(history))
    for output in (run.stdout + run.stderr, shown.stdout):
        assert password not in output and basic not in output
        assert "***" in output


@pytest.mark.parametrize(("variables", "message"), [
    ({"ALL_PROXY": "socks5://127.0.0.1:1080"},
     "ALL_PROXY names a SOCKS proxy, which needs the socksio package: pip install 'httpx[socks]'"),
    ({"HTTPS_PROXY": "http://me:s3cret@proxy.example.test:s3cret"},
     "HTTPS_PROXY is not a proxy URL that can be used: check its scheme, host and port"),
    ({"ALL_PROXY": "ftp://me:s3cret@proxy.example.test:1"},  # an internal error quoting its user and host
     "ALL_PROXY is not a proxy URL that can be used: its scheme must be one of http, https, socks5, socks5h"),
    ({"https_proxy": "http://me:s3cret@127.0.0.1:99999"},  # every batch failed as an internal error
     "https_proxy is not a proxy URL that can be used: its port must be from 1 to 65535"),
], ids=["socks", "bad-port", "ftp", "port-99999"])
def test_a_proxy_variable_that_cannot_be_used_is_one_line(store: Path, variables: dict[str, str], message: str) -> None:
    """They were internal errors (exit 1), the SOCKS one telling to pip install."""
    run = run_cli("query", str(store), QUESTION, "--base-url", "https://api.example.test/v1", "--model", "m1",
                  "--no-config", env=clean_env(**variables))
    assert (run.code, run.stdout, run.stderr) == (2, "", f"graphrag-tui: error: {message}\n")


def test_a_loopback_base_url_never_goes_through_a_proxy(store: Path) -> None:
    with ScriptedChatServer(Scripted({})) as proxy, ScriptedChatServer(Scripted(MAPS)) as server:
        run = query(store, server.base_url, "--model", "m1", "--no-config",
                    env=clean_env(HTTP_PROXY=proxy.base_url.removesuffix("/v1"), ALL_PROXY=proxy.base_url))
        assert proxy.requests == []
    assert run.code == 0, run.stderr
