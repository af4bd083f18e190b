"""A Slack body decoded in C reads exactly as the standard library and Bolt read it: percent-escapes (upper and lower
case, multi-byte UTF-8, invalid UTF-8, loose or cut-off "%"), "+" and raw "=", text beyond ASCII, line breaks;
an interaction gives Bolt the payload Bolt would have found, a slash command its fields."""

from __future__ import annotations

import json
import random
import urllib.parse

import pytest
from slack_bolt.request.internals import parse_body

from bot.web.slack_body import FORM, bolt_text, form_fields, unquote_plus

PIECES = ["a", "Z", "9", " ", "+", "=", "&", "%", "%%", "%4", "%zz", "%2", "%20", "%3D", "%3d", "%25", "%2B", "%26", "%0A", "%0D",
          "%C3%A9", "%c3%a9", "%C3", "%E2%82%AC", "%E2%82", "%F0%9F%98%80", "%ff", "%FE%FF", "é", "€", "\n", "\r\n", "\t", "=0A",
          "=\n", "==", "~", "-", "_", ".", "*", "'", "(", ")"]


def random_texts(count: int) -> list[str]:
    rng = random.Random(41)
    return ["".join(rng.choice(PIECES) for _ in range(rng.randint(0, 16))) for _ in range(count)]


def test_unquote_plus_is_the_standard_librarys() -> None:
    for text in random_texts(60_000):
        assert unquote_plus(text) == urllib.parse.unquote_plus(text), repr(text)


def test_form_fields_are_the_standard_librarys() -> None:
    texts = random_texts(20_000)
    for left, right in zip(texts[::2], texts[1::2], strict=True):
        body = f"{left}&{right}&text={left}"
        assert form_fields(body) == dict(urllib.parse.parse_qsl(body, keep_blank_values=True)), repr(body)


def test_bolt_reads_the_payload_and_the_fields_it_would_have_read() -> None:
    message = {"type": "block_actions", "trigger_id": "1.2.abc", "user": {"id": "U1"},
               "message": {"text": "Ünïcode & 100% \"quoted\" + plus = equals\nnew line", "blocks": [{"type": "section"}] * 30},
               "actions": [{"action_id": "approve", "value": "a=b&c=d"}]}
    interaction = urllib.parse.urlencode({"payload": json.dumps(message, ensure_ascii=False)})
    assert json.loads(bolt_text(interaction, FORM)) == parse_body(interaction, FORM) == message
    command = urllib.parse.urlencode({"command": "/schema", "text": "propose orders-value “quoted” 100%", "user_id": "U1", "trigger_id": "t"})
    assert json.loads(bolt_text(command, FORM)) == parse_body(command, FORM)
    event = json.dumps({"type": "event_callback", "event_id": "Ev1", "event": {"type": "app_home_opened"}})
    assert bolt_text(event, "application/json") == event


def test_a_payload_that_is_not_a_json_object_is_refused() -> None:
    with pytest.raises(ValueError, match="not a JSON object"):
        bolt_text("payload=%5B1%2C2%5D", FORM)
