"""Issue 12: the wait a 429 announces, read from each header form, in the issue's order of
precedence (models/rate_limit_headers.py); hostile values are ignored, never an error."""

from __future__ import annotations

import httpx
import pytest

from graphrag_tui.models.rate_limit_headers import announced_wait, parse_reset, parse_retry_after_ms


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("6m0s", 360.0),
        ("20ms", 0.02),
        ("1s", 1.0),
        ("1.5s", 1.5),
        ("59.874s", 59.874),
        ("1h2m3.5s", 3723.5),
        ("2m59.56s", 179.56),
        ("250us", 0.00025),
        ("500µs", 0.0005),
        ("1000000ns", 0.001),
        ("0s", 0.0),
        ("7", 7.0),
        ("0.25", 0.25),
        (" 3s ", 3.0),
    ],
)
def test_reset_durations(value: str, seconds: float) -> None:
    assert parse_reset(value) == pytest.approx(seconds, abs=1e-12)


@pytest.mark.parametrize(
    "value", [None, "", "soon", "-1s", "1d", "s", "1.2.3s", "nan", "inf", "1e3", "1 s", "3s" * 40, "１s"]
)
def test_reset_values_that_are_not_durations_are_ignored(value: str | None) -> None:
    assert parse_reset(value) is None


@pytest.mark.parametrize(("value", "seconds"), [("1500", 1.5), ("20.5", 0.0205), ("0", 0.0), (" 7 ", 0.007)])
def test_retry_after_ms(value: str, seconds: float) -> None:
    assert parse_retry_after_ms(value) == pytest.approx(seconds)


@pytest.mark.parametrize("value", ["-5", "NaN", "inf", "1e9", "soon", "", "9" * 80])
def test_retry_after_ms_that_is_not_a_number_is_ignored(value: str) -> None:
    assert parse_retry_after_ms(value) is None


def wait(**headers: str):
    return announced_wait(httpx.Headers({k.replace("_", "-"): v for k, v in headers.items()}), now=0.0)


def test_each_form_alone() -> None:
    assert wait(retry_after_ms="250") == (0.25, "retry-after-ms")
    assert wait(retry_after="3") == (3.0, "retry-after")
    assert wait(retry_after="Thu, 01 Jan 1970 00:00:30 GMT") == (30.0, "retry-after")
    assert wait(x_ratelimit_reset_requests="20ms") == (0.02, "x-ratelimit-reset-requests")
    assert wait(x_ratelimit_reset_tokens="6m0s") == (360.0, "x-ratelimit-reset-tokens")
    assert wait() is None


def test_precedence_ms_then_seconds_then_the_larger_reset() -> None:
    everything = {"retry_after_ms": "40", "retry_after": "2", "x_ratelimit_reset_requests": "1s",
                  "x_ratelimit_reset_tokens": "3s"}
    assert wait(**everything) == (0.04, "retry-after-ms")
    everything.pop("retry_after_ms")
    assert wait(**everything) == (2.0, "retry-after")
    everything.pop("retry_after")
    assert wait(**everything) == (3.0, "x-ratelimit-reset-tokens")
    assert wait(x_ratelimit_reset_requests="6m0s", x_ratelimit_reset_tokens="20ms") == (
        360.0, "x-ratelimit-reset-requests")


def test_a_bad_header_gives_way_to_the_next_one() -> None:
    assert wait(retry_after_ms="soon", retry_after="2") == (2.0, "retry-after")
    assert wait(retry_after="-3", x_ratelimit_reset_requests="1s") == (1.0, "x-ratelimit-reset-requests")
    assert wait(x_ratelimit_reset_requests="forever", x_ratelimit_reset_tokens="20ms") == (
        0.02, "x-ratelimit-reset-tokens")
    assert wait(retry_after_ms="inf", retry_after="nan", x_ratelimit_reset_tokens="-1s") is None


def test_header_names_are_looked_up_without_regard_to_case() -> None:
    headers = httpx.Headers({"Retry-After-Ms": "100", "X-RateLimit-Reset-Tokens": "9s"})
    assert announced_wait(headers) == (0.1, "retry-after-ms")
