"""Reading the studio's answers in tests."""

from __future__ import annotations


def error_json(response) -> dict:
    """A JSON error's body without its ``request_id``, after checking that it names the request its
    ``X-Request-ID`` header does (every JSON error carries both, studio.observability): the rest compares exactly."""
    body = dict(response.json())
    assert body.pop("request_id") == response["X-Request-ID"], body
    return body
