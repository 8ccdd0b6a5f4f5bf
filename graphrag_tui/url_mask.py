"""Masking database passwords in any text: the last guard of every output.

Light on purpose (no store, no pydantic): the CLI masks its error lines with it before it
has loaded anything else.
"""

from __future__ import annotations

import re

MASK = "***"
#: Query parameters of a libpq URL whose values are secret.
SECRET_PARAMETERS = frozenset({"password", "sslpassword"})

# A PostgreSQL URL's user-info password (up to the last "@" before the host) and the
# secret query parameters, anywhere in a text.
_URL_USERINFO = re.compile(r"(?i)(postgres(?:ql)?://)([^\s/?#]*)@")
_PARAMETER = re.compile(r"(?i)(\b(?:ssl)?password=)[^&\s'\"]*")
# An http(s) URL's query string (`--base-url` may carry one, with a credential in it).
_HTTP_QUERY = re.compile(r"(?i)(\bhttps?://[^\s?#'\"]*\?)[^\s#'\"]*")


def mask_urls(text: str) -> str:
    """`text` with the password of every PostgreSQL URL in it (and every `password=`
    parameter) replaced by ***."""
    def userinfo(match: re.Match[str]) -> str:
        user, colon, _ = match.group(2).partition(":")
        return f"{match.group(1)}{user}{':' + MASK if colon else ''}@"

    return _PARAMETER.sub(rf"\g<1>{MASK}", _URL_USERINFO.sub(userinfo, text))


def mask_http_queries(text: str) -> str:
    """`text` with the query string of every http(s) URL in it replaced by ***: a base
    URL's may hold a key (`?key=...`), and httpx logs each request's whole URL."""
    return _HTTP_QUERY.sub(rf"\g<1>{MASK}", text)
