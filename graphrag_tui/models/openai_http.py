"""An async OpenAI-compatible chat-completions client on httpx (SPEC §4).

One attempt per `complete()` call: the engine owns retries. Failures become
`ModelError` with kind `timeout`, `transport`, `http`, `rate_limited` (a 429, with the wait
its headers announce: rate_limit_headers.py), `invalid_json` (the whole body is not JSON) or
`response_too_large` (the body passed the size cap; it is read as a stream and never held
whole). The API key travels only in the `Authorization` header; it never appears
in a message, a repr or the description, and every text that came from the server, whatever
its status, is masked before it leaves this module (see `key_pattern`).
"""

from __future__ import annotations

import asyncio
import base64
import bisect
import contextlib
import functools
import importlib
import ipaddress
import json
import logging
import math
import os
import re
import ssl
import stat
import string
from collections.abc import AsyncIterator, Mapping, Sequence
from html.entities import html5
from typing import Any, Literal

import certifi
import httpx

from ..engine import ChatReply, ChatRequest, ErrorKind, ModelError, RateWaitSource, TextCallback, Usage
from ..errors import InputError
from .azure import AZURE_KEY_HEADER, takes_api_key_header
from .content_encoding import ACCEPT_ENCODING, CapPassed, CappedDecoder
from .rate_limit_headers import announced_wait, parse_retry_after
from .sse import SSEReader
from .usage_reply import parse_usage

log = logging.getLogger("graphrag_tui.models")

ResponseFormat = Literal["json_object", "json_schema", "text"]
RESPONSE_FORMATS: tuple[str, ...] = ("json_object", "json_schema", "text")
#: `auto`: `max_tokens` until a 400 says the model wants `max_completion_tokens` (once).
MaxTokensField = Literal["auto", "max_tokens", "max_completion_tokens"]
MAX_TOKENS_FIELDS: tuple[str, ...] = ("auto", "max_tokens", "max_completion_tokens")
#: Body fields this client owns: [model.extra_body] may not set them.
OWN_BODY_FIELDS = frozenset({"model", "messages", "stream", "stream_options"})
#: Headers the HTTP layer owns: [model.headers] may not set them.
OWN_HEADERS = frozenset({"host", "content-length", "content-type", "transfer-encoding", "connection", "accept"})
_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
#: A 400 that names `max_tokens` as not supported (OpenAI: "Unsupported parameter: 'max_tokens'
#: is not supported with this model. Use 'max_completion_tokens' instead.").
_MAX_TOKENS_REFUSED = re.compile(r"\bmax_tokens\b")
_MAX_TOKENS_HINT = re.compile(r"max_completion_tokens|unsupported|not supported|unrecognized|unknown|not allowed", re.I)
_STREAM_REFUSED = re.compile(r"\bstream(?:_options)?\b")

#: Host for which OPENAI_API_KEY is used without --api-key-env.
OPENAI_HOST = "api.openai.com"

#: Default of --max-response-bytes: a chat completion is a few KB; past this, stop reading.
DEFAULT_MAX_RESPONSE_BYTES = 8 * 1024 * 1024
#: The largest --max-response-bytes: 1 TiB.
MAX_RESPONSE_BYTES = 1 << 40

_EXCERPT_CHARS = 200
_MASK = "***"
#: Characters written after a backslash as themselves: JSON's (besides the \uXXXX form), the
#: quote Python's repr escapes (httpx quotes a bad status line as bytes: `b'...\'...'`), and
#: Markdown's, any ASCII punctuation (a report's `sk\-KEY` renders as the key).
_BACKSLASH_ESCAPABLE = string.punctuation
#: A host name as a request can carry it (IDNA-encoded by httpx); IPv6 literals aside.
_HOSTNAME = re.compile(r"[a-z0-9_-]+(?:\.[a-z0-9_-]+)*\.?")


#: The longest API key taken (an Entra ID token is 1,500 to 3,000 characters).
MAX_KEY_CHARS = 4096


def check_api_key(value: str, source: str) -> None:
    """InputError unless the key is printable ASCII without spaces. Anything else (a trailing
    CR or LF from `$(cat keyfile)`, a space, a non-ASCII letter) cannot go in a header, and
    the error httpx would raise quotes the header. The message names where the key came
    from and never shows any part of it."""
    if not all("!" <= ch <= "~" for ch in value):
        raise InputError(
            f"{source} holds an API key with a space, a control character (such as a "
            "trailing newline) or a non-ASCII character: remove it"
        )
    if len(value) > MAX_KEY_CHARS:  # (the pattern that masks it compiles in some 0.3 ms a character)
        raise InputError(f"{source} holds an API key of {len(value):,} characters: graphrag-tui takes keys of up to "
                         f"{MAX_KEY_CHARS:,}")


#: Characters a terminal shows as nothing, or that safe_text.clean removes (bidi controls,
#: line separators): the key with them between its characters looks like the key, or is
#: the key once cleaned.
_INVISIBLE_RANGES = (
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5), (0x180B, 0x180F),
    (0x200B, 0x200F), (0x2028, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0), (0xFFF0, 0xFFFB), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF),
)
_INVISIBLE = frozenset(chr(code) for first, last in _INVISIBLE_RANGES for code in range(first, last + 1))


def looks_blank(text: str) -> bool:
    """Whether a terminal shows `text` as nothing but spaces."""
    return not "".join(ch for ch in text if ch not in _INVISIBLE).strip()


#: HTML's named character references, by the character each stands for (`&sol;` is `/`).
_HTML_NAMES: dict[str, list[str]] = {}
for _name, _value in sorted(html5.items(), key=lambda item: -len(item[0])):  # (the longest first: `amp;` before `amp`)
    _HTML_NAMES.setdefault(_value, []).append(re.escape(_name))
#: What may hide between two of the key's characters: an invisible character; a JSON \u
#: escape of any character outside printable ASCII (a surrogate too), or a \U one; a \x or
#: octal escape (Python's repr of bytes, as h11 quotes a bad header line; C's), a percent-encoded byte or an HTML
#: numeric reference of anything outside printable ASCII; or an HTML named reference of an
#: invisible character (`&ZeroWidthSpace;`); or an invisible character as the terminal
#: cleaning shows it (`⟨U+200B⟩`, safe_text); or a control character (a body in UTF-16 has a
#: NUL between the key's characters; the cleaning shows them as `␀`), an escape sequence
#: whole (CSI, OSC, DCS, `ESC ( B`), the symbol the cleaning shows for one, or U+FFFD (what
#: an undecodable byte becomes). The escaped forms take in more than the
#: invisible ones: masking a little more than the key costs nothing. (An escape is matched
#: from the first backslash of its run, so a run of backslashes costs linear time.)
_HIDDEN = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[]P_^X][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[ -/]*[0-~]"
    r"|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2400-\u2426\ufffd]|"
    "[" + "".join(f"{chr(first)}-{chr(last)}" for first, last in _INVISIBLE_RANGES) + "]"
    r"|\\(?<!\\\\)\\*U(?!000000(?:2[1-9a-fA-F]|[3-6][0-9a-fA-F]|7[0-9a-eA-E]))[0-9a-fA-F]{8}"
    r"|\\(?<!\\\\)\\*[uU](?!00(?:2[1-9a-fA-F]|[3-6][0-9a-fA-F]|7[0-9a-eA-E]))[0-9a-fA-F]{4}"
    r"|\\(?<!\\\\)\\*[xX](?:[01][0-9a-fA-F]|7[fF]|[89a-fA-F][0-9a-fA-F])"
    r"|\\(?<!\\\\)\\*(?!0(?:4[1-7]|[5-7][0-7])|1(?:[0-6][0-7]|7[0-6]))[0-3][0-7]{2}"
    r"|%(?:25)*(?:[01][0-9a-fA-F]|20|7[fF]|[89a-fA-F][0-9a-fA-F])"
    r"|&#[xX](?:0*+(?!(?:2[1-9a-fA-F]|[3-6][0-9a-fA-F]|7[0-9a-eA-E])(?![0-9a-fA-F]))[0-9a-fA-F]{1,6}|0+);?"
    r"|&#(?:0*+(?!(?:3[3-9]|[4-9][0-9]|1[01][0-9]|12[0-6])(?![0-9]))[0-9]{1,7}|0+);?"
    "|&(?:" + "|".join(name for ch in sorted(_INVISIBLE) for name in _HTML_NAMES.get(ch, ())) + ")"
    "|\u27e8U\\+[0-9A-F]{4,5}\u27e9"
)


#: The control characters among `_HIDDEN`'s that are ASCII (the quick test in `mask_key`).
_ASCII_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


#: The shortest secret also masked in hex and base64 (`encoded_forms`), and the shortest
#: proxy password masked: a shorter one would mask it in every word of a reply.
MIN_MASKED_SECRET = 8


def encoded_forms(key: str) -> list[str]:
    """The key's hex, and its base64 (standard and URL-safe) at each of the three places it
    may start within a 3-byte group (a `user:key` credential, a JSON body encoded whole):
    the characters that do not depend on the bytes around it. Nothing for a key shorter than
    MIN_MASKED_SECRET, whose forms would match in ordinary words."""
    if len(key) < MIN_MASKED_SECRET:
        return []
    data = key.encode()
    forms = [data.hex()]
    for skip in range(3):
        encoded = base64.b64encode(data[skip:skip + (len(data) - skip) // 3 * 3]).decode()
        forms += dict.fromkeys((encoded, encoded.translate(_URL_SAFE)))
    return forms


_URL_SAFE = str.maketrans("+/", "-_")


def key_pattern(key: str) -> re.Pattern[str]:
    r"""Matches the (printable ASCII) key written plainly, with JSON escapes (any character as
    \uXXXX in either hex case, \/ \" \\, the backslash itself escaped any number of times,
    and \' as Python's repr writes it), as \xXX, \UXXXXXXXX and octal escapes, percent-encoded
    (any byte as %XX in either case, or encoded again as %25XX) and as HTML character
    references (`&#x2f;`, `&#47;`, `&sol;`), in any mix; and, whole, in hex or base64
    (`encoded_forms`). Masking with it (`mask_key`) before the engine parses a reply means no
    escape can decode back to the key. A match starts a run of backslashes only at its first
    one, so a hostile body of backslashes costs linear time, not quadratic."""
    return re.compile(_key_forms(key))


def _key_forms(key: str) -> str:
    """`key_pattern`'s text."""
    parts = []
    for i, ch in enumerate(key):
        backslashes = r"(?<!\\)\\+" if i == 0 else r"\\+"
        forms = [re.escape(ch), backslashes + f"(?i:u(?:0000)?{ord(ch):04x}|x{ord(ch):02x}|0*{ord(ch):o})",
                 f"%(?:25)*(?i:{ord(ch):02x})", f"&#(?:[xX]0*(?i:{ord(ch):x})|0*{ord(ch)});?"]
        if ch in _BACKSLASH_ESCAPABLE:
            forms.append(backslashes + re.escape(ch))
        if ch != _fullwidth(ch):  # (read as the key, and NFKC makes it the key)
            forms.append(_fullwidth(ch))
        if ch in _HTML_NAMES:
            forms.append("&(?:" + "|".join(_HTML_NAMES[ch]) + ")")
        parts.append("(?:" + "|".join(forms) + ")")
    encoded = encoded_forms(key)  # (hex first, in either case)
    return "|".join(["".join(parts), *([f"(?i:{encoded[0]})", *map(re.escape, encoded[1:])] if encoded else [])])


def _fullwidth(ch: str) -> str:
    """The fullwidth form of a printable ASCII character (`ｋ` for `k`); itself for any other."""
    return chr(ord(ch) + 0xFEE0) if "!" <= ch <= "~" else ch


def secret_chars(secrets: Sequence[str]) -> frozenset[str]:
    """The characters the secrets' forms are made of, beyond their escapes' (`_StreamMasker`)."""
    plain = "".join(secrets)
    return frozenset(plain + "".join(map(_fullwidth, plain))
                     + "".join(form for secret in secrets for form in encoded_forms(secret)))


#: Names of base URL parameters, extra headers and body fields whose values are credentials
#: (`?sig=`, `X-Api-Key`, a gateway's token, `Authorization` itself, `Cookie`).
CREDENTIAL_NAME = re.compile(r"key|token|secret|passw|sig|auth|credential|cookie|session", re.IGNORECASE)


def given_secrets(headers: Mapping[str, str], body: Mapping[str, Any]) -> list[str]:
    """The credentials among the extra headers and body fields (at any depth), which a
    server may echo as it refuses them: each text whose name says it is one, and the token
    of one with a scheme (`Bearer TOKEN`)."""
    found: list[str] = []

    def take(name: object, value: object) -> None:
        if isinstance(value, Mapping):
            for inner, item in value.items():
                take(inner, item)
        elif isinstance(value, list):
            for item in value:
                take(name, item)
        elif isinstance(value, str) and isinstance(name, str) and CREDENTIAL_NAME.search(name):
            found.extend((value, value.strip().partition(" ")[2].strip()))

    take(None, {**headers, **body})
    return [secret for secret in dict.fromkeys(found) if len(secret) >= MIN_MASKED_SECRET]


def proxy_secrets(environ: Mapping[str, str]) -> list[str]:
    """The passwords the proxy variables hold, and the Basic credentials a proxy gets from
    them (`Proxy-Authorization`, which a proxy may echo in an error page), as httpx sends them."""
    found = []
    for name, value in environ.items():
        if name.lower() not in PROXY_VARIABLES or not value:
            continue
        try:
            url = httpx.URL(value)
        except Exception:  # (one httpx cannot read is refused as the client is made)
            continue
        if url.password:
            found += [url.password, base64.b64encode(f"{url.username}:{url.password}".encode()).decode()]
    return [secret for secret in dict.fromkeys(found) if len(secret) >= MIN_MASKED_SECRET]


def secrets_pattern(secrets: Sequence[str]) -> re.Pattern[str] | None:
    """One pattern for every secret's forms (`key_pattern`'s), or None for none."""
    if not secrets:
        return None
    if len(secrets) == 1:  # the key's own pattern: compiled once (re's cache), a long key's takes a second
        return key_pattern(secrets[0])
    return re.compile("|".join(f"(?:{_key_forms(secret)})" for secret in secrets))


def mask_key(text: str, pattern: re.Pattern[str]) -> str:
    """`text` with the key (`pattern`, key_pattern's) masked, also where hidden forms
    (`_HIDDEN`) lie between its characters, which a terminal would show as the key, or
    cleaning for it would join into the key. Those are found in the text without its hidden
    forms (one pattern with them between every two characters compiled ten times slower)."""
    masked = pattern.sub(_MASK, text)
    if masked.isascii() and "\\" not in masked and "%" not in masked and "&" not in masked \
            and _ASCII_CONTROL.search(masked) is None:
        return masked
    stripped = _HIDDEN.sub("", masked)
    if len(stripped) == len(masked) or pattern.search(stripped) is None:
        return masked
    # The key hides here: where each kept stretch starts, in `masked` and in `stripped`.
    kept_at, stripped_at, position, length = [], [], 0, 0
    for hidden in _HIDDEN.finditer(masked):
        kept_at.append(position)
        stripped_at.append(length)
        length += hidden.start() - position
        position = hidden.end()
    kept_at.append(position)
    stripped_at.append(length)

    def original(index: int) -> int:
        stretch = bisect.bisect_right(stripped_at, index) - 1
        return kept_at[stretch] + index - stripped_at[stretch]

    out, done = [], 0
    for match in pattern.finditer(stripped):
        start, end = original(match.start()), original(match.end() - 1) + 1
        out += (masked[done:start], _MASK)
        done = end
    out.append(masked[done:])
    return "".join(out)


class _Secret:
    """Holds the API key; its repr and str never show it."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "<secret>"

    __str__ = __repr__


def _host_port(url: httpx.URL) -> str:
    host = url.host
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    return f"{host}:{url.port}" if url.port is not None else host


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@functools.cache
def _load_async_transport() -> None:
    """httpx loads its async network backend (anyio's asyncio one) on the first request, which
    then reaches the server 60-110 ms later than the requests after it: enough to show a
    server rpm + 1 requests in one of its windows when a cap spaces the sends (issue 12).
    Loaded with the model instead; a future layout of anyio only skips this."""
    try:
        importlib.import_module("anyio._backends._asyncio")
    except ImportError:
        pass


def check_header_name(name: Any, label: str) -> str:
    if not isinstance(name, str) or not _HEADER_NAME.fullmatch(name):
        raise InputError(f"{label} must be a header name (letters, digits and !#$%&'*+-.^_`|~), got {name!r}")
    return name


def check_headers(headers: Any, label: str) -> dict[str, str]:
    """Extra request headers: names as HTTP allows them, values printable ASCII (no CR or
    LF, which would split the request), none of the headers the client sets itself."""
    if not isinstance(headers, Mapping):
        raise InputError(f"{label} must be a table of header names and values")
    checked: dict[str, str] = {}
    for name, value in headers.items():
        check_header_name(name, f"{label}: a header name")
        if name.lower() in OWN_HEADERS:
            raise InputError(f"{label} cannot set {name}: the client sets it")
        if not isinstance(value, str) or not all(" " <= ch <= "~" or ch == "\t" for ch in value):
            raise InputError(f"{label}: header {name} must be printable ASCII text on one line")
        checked[name] = value
    return checked


def check_extra_body(body: Any, label: str) -> dict[str, Any]:
    """Extra fields of the request body: a JSON object that leaves the client's own fields alone."""
    if not isinstance(body, Mapping):
        raise InputError(f"{label} must be a table (a JSON object) of body fields")
    owned = sorted(OWN_BODY_FIELDS & set(body))
    if owned:
        raise InputError(f"{label} cannot set {owned[0]!r}: the client sets it")
    if _depth(body) > MAX_EXTRA_BODY_DEPTH:  # the request is encoded deeper still, in the run's worker
        raise InputError(f"{label} is nested deeper than {MAX_EXTRA_BODY_DEPTH} levels")
    try:
        json.dumps(body, allow_nan=False, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(f"{label} holds text that is not valid Unicode (a lone surrogate)") from None
    except (TypeError, ValueError):
        raise InputError(f"{label} must hold JSON values only (no NaN or infinity)") from None
    return dict(body)


#: How deep extra body fields may nest (JSON's own encoder stops near 1,000).
MAX_EXTRA_BODY_DEPTH = 64


def _depth(value: Any) -> int:
    """How deep lists and tables nest in `value` (without recursion)."""
    deepest, level = 0, [value]
    while level:
        containers = [v for v in level if isinstance(v, (Mapping, list, tuple))]
        if not containers:
            break
        deepest += 1
        if deepest > MAX_EXTRA_BODY_DEPTH:
            break
        level = [item for c in containers for item in (c.values() if isinstance(c, Mapping) else c)]
    return deepest


def tls_context(environ: Mapping[str, str]) -> ssl.SSLContext:
    """The certificate authorities to trust: SSL_CERT_FILE and/or SSL_CERT_DIR when set,
    else the system's bundle (OpenSSL's default paths), else certifi's when the system has
    none (a bare container)."""
    cafile = environ.get("SSL_CERT_FILE") or None
    capath = environ.get("SSL_CERT_DIR") or None
    with contextlib.suppress(OSError):  # (a missing file is OpenSSL's to say)
        if cafile is not None and not stat.S_ISREG(os.stat(cafile).st_mode):  # a FIFO: OpenSSL waited for a writer
            raise InputError(f"the certificate file in SSL_CERT_FILE cannot be used: {cafile} is not a regular file")
    try:
        context = ssl.create_default_context(cafile=cafile, capath=capath)
    except (OSError, ssl.SSLError) as error:
        raise InputError(
            f"the certificate file or directory in SSL_CERT_FILE/SSL_CERT_DIR cannot be used: {error}"
        ) from None
    if cafile is None and capath is None and not context.get_ca_certs() and not _has_default_capath():
        context.load_verify_locations(certifi.where())
    return context


#: The variables httpx reads a proxy from (in either case), and the schemes it can use.
PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy")
_PROXY_SCHEMES = ("http", "https", "socks5", "socks5h")


def check_proxy_variables(environ: Mapping[str, str]) -> None:
    """InputError naming a proxy variable httpx could not use (an unknown scheme was an
    internal error quoting its user and host; a port past 65535 failed every call). Its
    value is never shown: it may hold a password (httpx's own words may quote a part)."""
    for name in sorted(k for k in environ if k.lower() in PROXY_VARIABLES and environ[k]):
        value = environ[name]
        try:
            url = httpx.URL(value if "://" in value else f"http://{value}")  # (as httpx reads it)
            port = url.port
        except Exception:  # httpx.InvalidURL and friends
            url, port = None, None
        if url is None or not url.host:
            raise InputError(f"{name} is not a proxy URL that can be used: check its scheme, host and port")
        if url.scheme not in _PROXY_SCHEMES:
            raise InputError(f"{name} is not a proxy URL that can be used: its scheme must be one of "
                             f"{', '.join(_PROXY_SCHEMES)}")
        if port is not None and not 0 < port < 65536:
            raise InputError(f"{name} is not a proxy URL that can be used: its port must be from 1 to 65535")


def _proxy_error(error: ImportError | httpx.InvalidURL, environ: Mapping[str, str]) -> str:
    """The proxy variables httpx could not use, named, never shown (they may hold a password)."""
    names = " and ".join(sorted(k for k in environ if k.lower() in PROXY_VARIABLES))
    if isinstance(error, ImportError):
        return (f"{names} names a SOCKS proxy, which needs the socksio package: "
                "pip install 'httpx[socks]'")
    return f"{names} is not a proxy URL that can be used: check its scheme, host and port"


def _has_default_capath() -> bool:
    """Whether OpenSSL's default CA directory holds certificates (loaded lazily, so
    `get_ca_certs` does not count them)."""
    capath = ssl.get_default_verify_paths().capath
    try:
        return bool(capath) and any(name.endswith((".0", ".pem", ".crt")) for name in os.listdir(capath or ""))
    except OSError:
        return False


#: What the escaped forms of a secret are written with: \\uXXXX, \\xXX, %XX and HTML's `&#x2f;`,
#: `&#47;` and named references (letters).
_FORM_CHARS = frozenset(string.punctuation + string.ascii_letters + string.digits + "\ufffd"
                        + "".join(map(chr, (*range(0x20), *range(0x7F, 0xA0), *range(0x2400, 0x2427)))))


class _KeyMaskingLog(logging.Filter):
    """httpx's own log lines (`-v`) quote what a server sent (its status line's reason
    phrase): a server that wrote the key there had it logged. The key of every open client
    is masked in them."""

    def __init__(self) -> None:
        super().__init__()
        self.patterns: dict[int, re.Pattern[str]] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        if self.patterns:
            message = masked = record.getMessage()
            for pattern in list(self.patterns.values()):
                masked = mask_key(masked, pattern)
            if masked != message:
                record.msg, record.args = masked, None
        return True


_KEY_MASKING_LOG = _KeyMaskingLog()
logging.getLogger("httpx").addFilter(_KEY_MASKING_LOG)


class _StreamMasker:
    """Masks the key in text that arrives in pieces. Whatever may still turn into a form of
    the key (a trailing run of characters a form of the key can contain) is held back until
    a character that cannot be part of one arrives, so no form is ever split between two
    released pieces and each piece is masked whole."""

    def __init__(self, chars: frozenset[str], pattern: re.Pattern[str] | None) -> None:
        self._pattern = pattern
        self._chars = chars | _FORM_CHARS | _INVISIBLE
        self._held: list[str] = []

    def feed(self, piece: str) -> str:
        if self._pattern is None:
            return piece
        cut = len(piece)
        while cut > 0 and piece[cut - 1] in self._chars:
            cut -= 1
        if cut == 0:
            self._held.append(piece)
            return ""
        released = "".join(self._held) + piece[:cut]
        self._held = [piece[cut:]]
        return mask_key(released, self._pattern)

    def flush(self) -> str:
        released, self._held = "".join(self._held), []
        return mask_key(released, self._pattern) if self._pattern is not None else released


def parse_base_url(text: str, label: str = "--base-url") -> httpx.URL:
    """The checked base URL, without user:password (it would end up in messages) or fragment.
    InputError (one line, naming `label`: where the URL was given) for anything that is not
    an http(s) URL with a valid host and port."""
    try:
        url = httpx.URL(text.strip()) if isinstance(text, str) else None
    except Exception:  # httpx.InvalidURL and friends
        url = None
    if url is None:
        raise InputError(f"{label} is not a valid URL")
    try:
        url.host  # noqa: B018  (httpx decodes an `xn--` label here: one it cannot raised idna's errors)
    except Exception:
        raise InputError(f"{label} has an invalid host: {url.raw_host.decode('ascii', 'replace')!r}") from None
    if url.scheme not in ("http", "https") or not url.host:
        raise InputError(f"{label} must be an http:// or https:// URL with a host")
    host = url.raw_host.decode("ascii", "replace")
    if ":" not in host and not _HOSTNAME.fullmatch(host):  # IPv6 literals are checked by httpx
        raise InputError(f"{label} has an invalid host: {host!r}")
    if url.port is not None and not 1 <= url.port <= 65535:
        raise InputError(f"{label} has port {url.port}, out of the range 1-65535")
    return url.copy_with(username=None, password=None, fragment=None)


class OpenAIChatModel:
    """Chat completions against `{base_url}/chat/completions` (base URL includes `/v1`).

    Streams when the engine asks (`complete(request, on_text=...)`): `stream: true` with
    server-sent events. A server that refuses streaming (a 400 naming `stream`, or a reply
    that is not `text/event-stream`) gets non-streaming requests from then on."""

    supports_streaming = True

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None,
        timeout: float = 120.0,
        response_format: ResponseFormat = "json_object",
        temperature: float | None = None,
        seed: int | None = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        *,
        top_p: float | None = None,
        reasoning_effort: str | None = None,
        headers: Mapping[str, str] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        max_tokens_field: MaxTokensField = "auto",
        api_key_header: str | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        url = parse_base_url(base_url)
        if not (isinstance(timeout, (int, float)) and math.isfinite(timeout) and timeout > 0):
            raise InputError("--timeout must be a positive number of seconds")
        if response_format not in RESPONSE_FORMATS:
            raise InputError(
                f"--response-format must be one of {', '.join(RESPONSE_FORMATS)}"
            )
        if not (isinstance(max_response_bytes, int) and 0 < max_response_bytes <= MAX_RESPONSE_BYTES):
            raise InputError(f"--max-response-bytes must be a positive number of bytes, at most {MAX_RESPONSE_BYTES}")
        if max_tokens_field not in MAX_TOKENS_FIELDS:
            raise InputError(f"--max-tokens-field must be one of {', '.join(MAX_TOKENS_FIELDS)}")
        if api_key is not None:
            check_api_key(api_key, "the key's environment variable")
        _load_async_transport()
        self._base = str(url.copy_with(query=None)).rstrip("/")
        #: Kept after the endpoint's path: `/v1?api-version=X` posts to
        #: `/v1/chat/completions?api-version=X`.
        self._query = url.query.decode("ascii")
        self.max_response_bytes = max_response_bytes
        self.model = model
        self.timeout = float(timeout)
        self.response_format: ResponseFormat = response_format
        self.temperature = temperature
        self.top_p = top_p
        self.seed = seed
        self.reasoning_effort = reasoning_effort
        self.extra_body = check_extra_body(extra_body or {}, "[model.extra_body]")
        self.max_tokens_field: MaxTokensField = max_tokens_field
        #: The token field sent now: `auto` starts with max_tokens and may switch once.
        self.token_field = "max_completion_tokens" if max_tokens_field == "max_completion_tokens" else "max_tokens"
        #: False once the server refused streaming.
        self.streaming = True
        self._key = _Secret(api_key) if api_key is not None else None
        loopback = _is_loopback(url.host)
        environ = os.environ if environ is None else environ
        # what a server or a proxy may echo back: the key, the credentials among the extra
        # headers and body fields, and the proxy's password (not for loopback, which no proxy carries)
        extra_headers = check_headers(headers or {}, "[model.headers]")
        secrets = ([api_key] if api_key else []) + given_secrets(extra_headers, self.extra_body) \
            + ([] if loopback else proxy_secrets(environ))
        self._secret_chars = secret_chars(secrets)  # (a set: never the key itself)
        self._key_pattern = secrets_pattern(secrets)
        if self._key_pattern is not None:
            _KEY_MASKING_LOG.patterns[id(self)] = self._key_pattern
        self.description = f"{model} @ {_host_port(url)}"
        self._headers = {"Accept": "application/json", "Accept-Encoding": ACCEPT_ENCODING, **extra_headers}
        self._key_header: tuple[str, _Secret] | None = None
        if api_key is not None:
            # Sent with each request to the base URL (never a client default: no other URL
            # gets it); redirects are not followed, so it cannot travel to another host.
            if api_key_header is not None:
                name = check_header_name(api_key_header, "--api-key-header")
                self._key_header = (name, _Secret(api_key))
            elif takes_api_key_header(url):
                self._key_header = (AZURE_KEY_HEADER, _Secret(api_key))
            else:
                self._key_header = ("Authorization", _Secret(f"Bearer {api_key}"))
            if self._key_header[0].lower() in {h.lower() for h in self._headers}:
                raise InputError(f"[model.headers] sets {self._key_header[0]}, the header that carries the API key")
        verify = tls_context(environ) if url.scheme == "https" else True
        if not loopback:
            check_proxy_variables(environ)
        try:
            self._client = httpx.AsyncClient(
                timeout=httpx.Timeout(self.timeout),
                limits=httpx.Limits(
                    max_connections=None, max_keepalive_connections=None, keepalive_expiry=30.0
                ),
                # Proxy variables must not route loopback traffic (local servers) elsewhere.
                trust_env=not loopback,
                verify=verify,
                follow_redirects=False,
            )
        except (ImportError, httpx.InvalidURL) as error:  # httpx reads the proxy variables here
            raise InputError(_proxy_error(error, environ)) from None

    # -- identity -------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return self._base

    def __repr__(self) -> str:
        key = "set" if self._key is not None else "none"
        return (
            f"OpenAIChatModel(model={self.model!r}, base_url={self._base!r}, "
            f"response_format={self.response_format!r}, api_key=<{key}>)"
        )

    # -- requests -------------------------------------------------------------------

    def payload(self, request: ChatRequest, *, stream: bool = False) -> dict[str, Any]:
        """The JSON body sent for `request`."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
        }
        mt = request.max_tokens
        if isinstance(mt, int) and not isinstance(mt, bool) and mt > 0:
            body[self.token_field] = mt
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.top_p is not None:
            body["top_p"] = self.top_p
        if self.seed is not None:
            body["seed"] = self.seed
        if self.reasoning_effort is not None:
            body["reasoning_effort"] = self.reasoning_effort
        if self.response_format == "json_object":
            body["response_format"] = {"type": "json_object"}
        elif self.response_format == "json_schema":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": f"{request.stage}_reply",
                    "schema": request.json_schema if request.json_schema is not None else {},
                    "strict": True,
                },
            }
        if stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        body.update(self.extra_body)
        return body

    def url_for(self, path: str) -> str:
        """The endpoint `path` under the base URL, with the base URL's query string after it."""
        return self._base + path + (f"?{self._query}" if self._query else "")

    async def complete(self, request: ChatRequest, *, on_text: TextCallback | None = None) -> ChatReply:
        return (await self._chat(request, on_text))[0]

    async def _chat(self, request: ChatRequest, on_text: TextCallback | None = None) -> tuple[ChatReply, dict[str, Any]]:
        """The reply (its text masked, its usage) and the whole completion body (for a
        streamed reply: the last chunk). A 400 that the model can answer by changing the
        request (the token field, streaming) is answered once, within this call."""
        adaptations: list[str] = []
        while True:
            stream = on_text is not None and self.streaming
            token_field = self.token_field
            try:
                if stream:
                    assert on_text is not None
                    text, usage, data, change = await self._stream_chat(self.payload(request, stream=True), on_text)
                    if change:
                        adaptations.append(change)
                    return ChatReply(text=text, usage=usage, adaptations=tuple(adaptations)), data
                status, body = await self._send("POST", "/chat/completions", json_body=self.payload(request))
            except ModelError as error:
                adapted = self._adapt(error, token_field, stream, request)
                if adapted is None:
                    error.adaptations = tuple(adaptations)
                    raise
                if adapted:
                    adaptations.append(adapted)
                continue
            data = self._parse_body(status, body)
            content = _message_content(data)
            usage = parse_usage(data.get("usage")) if isinstance(data, dict) else None
            if content is None:
                raise ModelError("http", "unexpected response body", status=status, raw_response=self._mask(body),
                                 adaptations=tuple(adaptations), usage=usage)
            return ChatReply(text=self._mask(content), usage=usage, adaptations=tuple(adaptations)), data

    def _adapt(self, error: ModelError, token_field: str, stream: bool, request: ChatRequest) -> str | None:
        """How the request changes to meet a 400 that refused a field: a change in words, ""
        when another call already made it, None when nothing changes (the error stands)."""
        if error.status != 400 or error.raw_response is None:
            return None
        text = error.raw_response
        sent_max_tokens = token_field == "max_tokens" and (request.max_tokens or 0) > 0
        if (
            self.max_tokens_field == "auto"
            and sent_max_tokens
            and _MAX_TOKENS_REFUSED.search(text)
            and _MAX_TOKENS_HINT.search(text)
        ):
            if self.token_field == "max_tokens":
                self.token_field = "max_completion_tokens"
                return "max_tokens -> max_completion_tokens (the server refused max_tokens)"
            return ""
        if stream and _STREAM_REFUSED.search(text):
            if self.streaming:
                self.streaming = False
                return "stream off (the server refused stream: true)"
            return ""
        return None

    async def list_models(self) -> list[str]:
        """Model ids from `GET {base}/models` (`data[].id`), in the server's order (masked)."""
        status, text = await self._send("GET", "/models")
        data = self._parse_body(status, text)
        try:
            ids = [item["id"] for item in data["data"]]
        except (KeyError, IndexError, TypeError):
            ids = None
        if ids is None or not all(isinstance(i, str) for i in ids):
            raise ModelError("http", "unexpected response body", status=status, raw_response=self._mask(text))
        return [self._mask(i) for i in ids]

    async def aclose(self) -> None:
        _KEY_MASKING_LOG.patterns.pop(id(self), None)
        await self._client.aclose()

    async def __aenter__(self) -> OpenAIChatModel:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- internals ------------------------------------------------------------------

    def _mask(self, text: str) -> str:
        return mask_key(text, self._key_pattern) if self._key_pattern is not None else text

    def _parse_body(self, status: int, text: str) -> Any:
        """The 2xx body as JSON; a body that is not JSON (or too deeply nested for the
        parser) is an `invalid_json` attempt, never an exception out of the run."""
        try:
            return json.loads(text)
        except ValueError:
            problem = "is not JSON"
        except RecursionError:
            problem = "is nested too deeply to parse"
        raise ModelError("invalid_json", f"response body {problem}", status=status, raw_response=self._mask(text))

    def _request_headers(self, json_body: bool) -> dict[str, str]:
        headers = dict(self._headers)
        if json_body:
            headers["Content-Type"] = "application/json"
        if self._key_header is not None:
            headers[self._key_header[0]] = self._key_header[1].reveal()
        return headers

    async def _send(self, method: str, path: str, json_body: dict[str, Any] | None = None) -> tuple[int, str]:
        """The 2xx status and response body as text (UTF-8, undecodable bytes as U+FFFD), read as a
        stream up to `max_response_bytes`; anything else is a ModelError."""
        content = None if json_body is None else json.dumps(json_body, ensure_ascii=False).encode("utf-8")
        async with self._response(method, path, content) as response:
            body = await self._read_capped(response, method, path)
        text = body.decode("utf-8", errors="replace")
        if not 200 <= response.status_code < 300:
            raise self._status_error(response, text)
        return response.status_code, text

    async def _stream_chat(
        self, json_body: dict[str, Any], on_text: TextCallback
    ) -> tuple[str, Usage | None, dict[str, Any], str]:
        """A streamed completion: each content delta goes to `on_text` (masked) as it
        arrives. Returns the whole text (masked), the usage of the last chunk, that chunk,
        and a change in words when the server answered without streaming."""
        method, path = "POST", "/chat/completions"
        content = json.dumps(json_body, ensure_ascii=False).encode("utf-8")
        async with self._response(method, path, content, stream=True) as response:
            if not 200 <= response.status_code < 300:
                body = await self._read_capped(response, method, path)
                raise self._status_error(response, body.decode("utf-8", errors="replace"))
            if "text/event-stream" not in response.headers.get("content-type", "").lower():
                # Not server-sent events: an ordinary reply; later calls do not ask to stream.
                body = await self._read_capped(response, method, path)
                text = body.decode("utf-8", errors="replace")
                data = self._parse_body(response.status_code, text)
                message, usage = _message_content(data), parse_usage(data.get("usage"))
                if message is None:
                    raise ModelError("http", "unexpected response body", status=response.status_code,
                                     raw_response=self._mask(text), usage=usage)
                change = ""
                if self.streaming:
                    self.streaming = False
                    change = "stream off (the server answered without server-sent events)"
                return self._mask(message), usage, data, change
            return await self._read_events(response, on_text) + ("",)

    async def _read_events(
        self, response: httpx.Response, on_text: TextCallback
    ) -> tuple[str, Usage | None, dict[str, Any]]:
        reader, masker = SSEReader(), _StreamMasker(self._secret_chars, self._key_pattern)
        pieces: list[str] = []
        usage: Usage | None = None
        last: dict[str, Any] = {}
        done = False
        raw_events: list[str] = []  # kept for the record of a stream that goes wrong (capped below)

        def handle(event: str) -> bool:
            nonlocal usage, last
            if event.strip() == "[DONE]":
                return True
            raw_events.append(event)
            try:
                chunk = json.loads(event)
            except (ValueError, RecursionError):
                raise ModelError("invalid_json", "a server-sent event of the stream is not JSON",
                                 status=response.status_code, raw_response=self._mask("\n".join(raw_events)),
                                 usage=usage) from None
            if not isinstance(chunk, dict):
                raise ModelError("invalid_json", "a server-sent event of the stream is not a JSON object",
                                 status=response.status_code, raw_response=self._mask("\n".join(raw_events)),
                                 usage=usage)
            if "error" in chunk:
                excerpt = _excerpt(self._mask(json.dumps(chunk["error"], ensure_ascii=False)))
                raise ModelError("http", f"the stream ended with an error: {excerpt}", status=response.status_code,
                                 raw_response=self._mask("\n".join(raw_events)), usage=usage)
            last = chunk
            # (a later chunk's unreadable usage does not undo a readable one)
            usage = parse_usage(chunk.get("usage")) or usage
            delta = _delta_content(chunk)
            if delta:
                pieces.append(delta)
                released = masker.feed(delta)
                if released:
                    on_text(released)
            return False

        async for data in self._body(response, "POST", "/chat/completions"):
            for event in reader.feed(data):
                done = done or handle(event)
            if done:
                break
        if not done:
            for event in reader.close():
                if handle(event):
                    break
        tail = masker.flush()
        if tail:
            on_text(tail)
        return self._mask("".join(pieces)), usage, last

    @contextlib.asynccontextmanager
    async def _response(
        self, method: str, path: str, content: bytes | None, *, stream: bool = False
    ) -> AsyncIterator[httpx.Response]:
        """One request and its response, read inside the block, all bounded by the timeout;
        httpx's errors become ModelError (the query string is left out of messages: it may
        carry a credential of its own)."""
        headers = self._request_headers(content is not None)
        if stream:
            headers["Accept"] = "text/event-stream"
        try:
            async with asyncio.timeout(self.timeout):
                async with self._client.stream(method, self.url_for(path), content=content, headers=headers) as response:
                    yield response
        except (TimeoutError, httpx.TimeoutException):
            raise ModelError("timeout", f"no reply within {self.timeout:g} s ({method} {path})") from None
        except httpx.HTTPError as exc:
            detail = self._mask(str(exc)) or type(exc).__name__
            raise ModelError("transport", f"{type(exc).__name__}: {detail} ({method} {self._base + path})") from None

    def _status_error(self, response: httpx.Response, text: str) -> ModelError:
        """The error of a non-2xx reply: a 429 is `rate_limited` with the wait it announces
        (and in which header form); a 503's Retry-After is kept for the retry."""
        masked = self._mask(text)
        excerpt = _excerpt(masked)
        kind: ErrorKind = "http"
        retry_after: float | None = None
        wait_source: RateWaitSource | None = None
        if response.status_code == 429:
            kind = "rate_limited"
            announced = announced_wait(response.headers)
            if announced is not None:
                retry_after, wait_source = announced
        elif response.status_code == 503:
            retry_after = parse_retry_after(response.headers.get("retry-after"))
        return ModelError(
            kind,
            f"HTTP {response.status_code}: {excerpt}" if excerpt else f"HTTP {response.status_code}",
            status=response.status_code,
            retry_after=retry_after,
            wait_source=wait_source,
            raw_response=masked,
        )

    async def _read_capped(self, response: httpx.Response, method: str, path: str) -> bytes:
        """The body, or ModelError `response_too_large` as soon as it passes the cap: the rest
        is never read (leaving the `stream` block closes the connection)."""
        body = bytearray()
        async for chunk in self._body(response, method, path):
            body += chunk
        return bytes(body)

    async def _body(self, response: httpx.Response, method: str, path: str) -> AsyncIterator[bytes]:
        """The body as it arrives, its coding undone, or ModelError `response_too_large` as
        soon as it passes the cap, as sent or as inflated (content_encoding.py: a compressed
        body inflates read by read only up to the cap; empty gzip members inflate to nothing)."""
        cap, size, sent = self.max_response_bytes, 0, 0
        decoder = CappedDecoder(response.headers.get("content-encoding", ""), cap)
        try:
            if response.is_stream_consumed:  # made in memory (by a transport that is no network), decoded
                if len(response.content) > cap:
                    raise CapPassed
                yield response.content
                return
            async for raw in response.aiter_raw():
                data = decoder.feed(raw)
                size, sent = size + len(data), sent + len(raw)
                if size > cap or sent > cap:
                    raise CapPassed
                yield data
            data = decoder.flush()
            if size + len(data) > cap:
                raise CapPassed
            yield data
        except CapPassed:
            raise ModelError(
                "response_too_large",
                f"the response to {method} {path} passed the {cap}-byte cap (--max-response-bytes); stopped reading it",
                status=response.status_code,
            ) from None


def _excerpt(text: str) -> str:
    excerpt = " ".join(text.split())
    return excerpt[: _EXCERPT_CHARS - 1] + "…" if len(excerpt) > _EXCERPT_CHARS else excerpt


def _message_content(data: Any) -> str | None:
    try:
        content = data["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        return None
    return content if isinstance(content, str) else None


def _delta_content(chunk: dict[str, Any]) -> str | None:
    try:
        content = chunk["choices"][0]["delta"].get("content")
    except (KeyError, IndexError, TypeError, AttributeError):
        return None
    return content if isinstance(content, str) else None


def resolve_api_key(
    base_url: str, api_key_env: str | None, environ: Mapping[str, str]
) -> str | None:
    """The API key to send, read from the environment (SPEC §5).

    With `api_key_env` that variable must be set (and non-empty), else InputError naming
    the variable. Without it, OPENAI_API_KEY is used only when the base URL's host is
    exactly `api.openai.com`: a key is never sent to another host unless the user names it.
    """
    if api_key_env is not None:
        value = environ.get(api_key_env)
        if not value:
            raise InputError(
                f"--api-key-env names the environment variable {api_key_env}, which is not set"
            )
        check_api_key(value, f"the environment variable {api_key_env}")
        return value
    try:
        host = httpx.URL(base_url.strip()).host
    except Exception:
        return None
    if host.lower().rstrip(".") == OPENAI_HOST:
        value = environ.get("OPENAI_API_KEY") or None
        if value is not None:
            check_api_key(value, "the environment variable OPENAI_API_KEY")
        return value
    return None
