"""Calling the running bot's HTTP API from a command (``bot propose``, ``bot gate``): the token from
$CHANGEOPS_API_TOKEN, the address from ``--url`` or $CHANGEOPS_URL."""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request
from typing import Any

from bot.domain.references import as_json, parse_pin

DEFAULT_URL = "http://127.0.0.1:3000"


def with_references(body: dict[str, Any], texts: list[str] | None, command: str) -> bool:
    """Put ``--reference NAME=SUBJECT:VERSION`` values into a request body; False (said on stderr) when one is malformed."""
    if texts is None:
        return True
    try:
        body["references"] = as_json([parse_pin(text) for text in texts])
    except ValueError as err:
        print(f"{command}: {err}", file=sys.stderr)
        return False
    return True


class Unreachable(Exception):
    """No token, or the bot could not be reached: a usage problem (exit 2); the message says which."""


def call(path: str, body: Any, url: str | None = None, timeout: float = 60) -> tuple[int, Any]:
    """POST ``body`` as JSON to ``path`` (GET when ``body`` is None); the HTTP status and the decoded answer (errors included)."""
    token = os.environ.get("CHANGEOPS_API_TOKEN", "").strip()
    if not token:
        raise Unreachable("CHANGEOPS_API_TOKEN is not set: give the bot's API token")
    base = (url or os.environ.get("CHANGEOPS_URL") or DEFAULT_URL).rstrip("/")
    request = urllib.request.Request(base + path, data=None if body is None else json.dumps(body).encode(), method="GET" if body is None else "POST",
                                     headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 (the operator's own bot)
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        try:
            return err.code, json.loads(err.read() or b"{}")
        except json.JSONDecodeError:
            return err.code, {"error": str(err.reason)}
    except urllib.error.URLError as err:
        raise Unreachable(f"cannot reach the bot at {base}: {err.reason}") from None


def ask(prog: str, path: str, body: Any, url: str | None = None, timeout: float = 60) -> tuple[int, Any]:
    """The bot's answer with the exit code a command gives: 0 and the answer; 2 when the bot cannot be asked, 1 when it
    refused (each said on stderr, after ``prog``)."""
    try:
        status, answer = call(path, body, url, timeout=timeout)
    except Unreachable as err:
        print(f"{prog}: {err}", file=sys.stderr)
        return 2, None
    if status >= 400:
        print(f"{prog}: {answer.get('error', status)}", file=sys.stderr)
        return 1, None
    return 0, answer
