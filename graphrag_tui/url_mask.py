"""Masking database passwords in any text: the last guard of every output.

Light on purpose (no store, no pydantic): the CLI masks its error lines with it before it
has loaded anything else.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

MASK = "***"
#: Query parameters of a libpq URL whose values are secret.
SECRET_PARAMETERS = frozenset({"password", "sslpassword"})

# A PostgreSQL URL's user-info password (up to the last "@" before the host) and the
# secret query parameters, anywhere in a text.
# (Spaces are allowed in it: a URL no parser accepts is still masked in the message about it.)
_URL_USERINFO = re.compile(r"(?i)(postgres(?:ql)?://)([^\n/?#]*)@")
# (A value runs to `&`, `#` or a space, quotes included: one stopped at a quote and showed the
# rest of a password holding one. One already masked is left, so the `:` after it stays.)
_PARAMETER = re.compile(r"(?i)(\b(?:ssl)?password=)(?!\*\*\*(?:[&\s:#'\"]|$))[^&\s#]*")
_QUOTED = re.compile(r'"([^"]*)"')
_SPLIT = re.compile(r"[\"'\s]+")
# An http(s) URL's query string (`--base-url` may carry one, with a credential in it).
_HTTP_QUERY = re.compile(r"(?i)(\bhttps?://[^\s?#'\"]*\?)[^\s#'\"]*")


def mask_urls(text: str) -> str:
    """`text` with the password of every PostgreSQL URL in it (and every `password=`
    parameter) replaced by ***."""
    def userinfo(match: re.Match[str]) -> str:
        user, colon, _ = match.group(2).partition(":")
        return f"{match.group(1)}{user}{':' + MASK if colon else ''}@"

    return _PARAMETER.sub(rf"\g<1>{MASK}", _URL_USERINFO.sub(userinfo, text))


def url_secrets(url: str) -> set[str]:
    """The secrets of a PostgreSQL URL as typed, raw and percent-decoded: its user-info
    password and its password= and sslpassword= values, found even in a URL no parser
    accepts (the messages about it quote pieces of it)."""
    rest = url.split("://", 1)[-1]
    authority = re.split("[/?#]", rest, maxsplit=1)[0]
    found = set()
    if "@" in authority:
        _, colon, password = authority.rpartition("@")[0].partition(":")
        if colon:
            found.add(password)
    query = rest.partition("?")[2].partition("#")[0]
    for pair in query.split("&"):
        key, _, value = pair.partition("=")
        if key.lower() in SECRET_PARAMETERS:
            found.add(value)
    return {form for secret in found for form in (secret, unquote(secret)) if form}


def mask_url_secrets(text: str, url: str) -> str:
    """`text`, a message about `url` (libpq's, say), with the URL's secrets masked: each
    double-quoted piece that holds one or is part of one (libpq quotes the piece it cannot
    read: `invalid percent-encoded token: "S3cr%zzet"`), and every other occurrence of one
    of four characters or more, or of a piece of one between its quotes and spaces (a
    shorter one would mask the message's words)."""
    secrets = url_secrets(url)
    if not secrets:
        return text

    def quoted(match: re.Match[str]) -> str:
        piece = match.group(1)
        hit = any(secret in piece or (piece and piece in secret) for secret in secrets)
        return f'"{MASK}"' if hit else match.group(0)

    # whole first: a secret holding a quote was cut where libpq quoted it, and its rest shown
    for secret in sorted(secrets, key=len, reverse=True):
        if len(secret) >= 4:
            text = text.replace(secret, MASK)
    text = _QUOTED.sub(quoted, text)
    for piece in sorted({p for secret in secrets for p in _SPLIT.split(secret)}, key=len, reverse=True):
        if len(piece) >= 4:  # what a quote or a space left of a secret
            text = text.replace(piece, MASK)
    return text


def mask_http_queries(text: str) -> str:
    """`text` with the query string of every http(s) URL in it replaced by ***: a base
    URL's may hold a key (`?key=...`), and httpx logs each request's whole URL."""
    return _HTTP_QUERY.sub(rf"\g<1>{MASK}", text)
