"""Slack's documented Block Kit and message limits, reported the way Slack reports them.

Each problem is one string like Slack's ``response_metadata.messages`` entries:
``[ERROR] must be less than 3001 characters [json-pointer:/blocks/0/text/text]``.
"""

from __future__ import annotations

from typing import Any

MESSAGE_TEXT_MAX = 40_000
MAX_BLOCKS = {"message": 50, "modal": 100, "home": 100}
BLOCK_TYPES = {
    "section", "actions", "context", "divider", "header", "image", "input",
    "rich_text", "file", "video", "markdown", "context_actions", "table",
}
ELEMENT_TYPES = {
    "button", "static_select", "external_select", "users_select", "conversations_select",
    "channels_select", "multi_static_select", "multi_external_select", "multi_users_select",
    "multi_conversations_select", "multi_channels_select", "overflow", "datepicker",
    "datetimepicker", "timepicker", "checkboxes", "radio_buttons", "plain_text_input",
    "email_text_input", "url_text_input", "number_input", "file_input", "image",
    "rich_text_input", "workflow_button",
}
SELECTS_WITH_OPTIONS = {"static_select", "multi_static_select", "overflow", "checkboxes", "radio_buttons"}


class _Problems:
    def __init__(self) -> None:
        self.items: list[str] = []

    def add(self, pointer: str, message: str) -> None:
        self.items.append(f"[ERROR] {message} [json-pointer:{pointer}]")

    def length(self, pointer: str, value: Any, maximum: int) -> None:
        if isinstance(value, str) and len(value) > maximum:
            self.add(pointer, f"must be less than {maximum + 1} characters")


def validate_blocks(blocks: Any, surface: str = "message") -> list[str]:
    """Every limit that ``blocks`` breaks on ``surface`` (message, modal or home)."""
    problems = _Problems()
    if not isinstance(blocks, list):
        problems.add("/blocks", "expected an array")
        return problems.items
    if len(blocks) > MAX_BLOCKS[surface]:
        problems.add("/blocks", f"no more than {MAX_BLOCKS[surface]} items allowed")
    block_ids: set[str] = set()
    for i, block in enumerate(blocks):
        _block(problems, f"/blocks/{i}", block, block_ids)
    return problems.items


def validate_view(view: Any) -> list[str]:
    """Every limit a modal or Home tab view breaks."""
    problems = _Problems()
    if not isinstance(view, dict):
        problems.add("/view", "expected an object")
        return problems.items
    kind = view.get("type")
    if kind not in ("modal", "home"):
        problems.add("/view/type", "must be one of modal, home")
        return problems.items
    if kind == "modal":
        title = view.get("title")
        if not isinstance(title, dict):
            problems.add("/view/title", "is required")
        else:
            _text(problems, "/view/title", title, 24, plain_only=True)
        for key in ("submit", "close"):
            if key in view:
                _text(problems, f"/view/{key}", view[key], 24, plain_only=True)
        has_input = any(isinstance(b, dict) and b.get("type") == "input" for b in view.get("blocks") or [])
        if has_input and "submit" not in view:
            problems.add("/view/submit", "is required when an input block is present")
    problems.length("/view/private_metadata", view.get("private_metadata"), 3000)
    problems.length("/view/callback_id", view.get("callback_id"), 255)
    problems.length("/view/external_id", view.get("external_id"), 255)
    for item in validate_blocks(view.get("blocks", []), kind):
        problems.items.append(item.replace("[json-pointer:/blocks", "[json-pointer:/view/blocks"))
    return problems.items


def _block(problems: _Problems, at: str, block: Any, block_ids: set[str]) -> None:
    if not isinstance(block, dict):
        problems.add(at, "expected an object")
        return
    kind = block.get("type")
    if kind not in BLOCK_TYPES:
        problems.add(f"{at}/type", f"unsupported type: {kind}")
        return
    block_id = block.get("block_id")
    if block_id is not None:
        problems.length(f"{at}/block_id", block_id, 255)
        if block_id in block_ids:
            problems.add(f"{at}/block_id", f"duplicate block_id: {block_id}")
        block_ids.add(block_id)
    action_ids: set[str] = set()
    if kind == "section":
        if "text" not in block and "fields" not in block:
            problems.add(at, "must provide either text or fields")
        if "text" in block:
            _text(problems, f"{at}/text", block["text"], 3000)
        fields = block.get("fields", [])
        if len(fields) > 10:
            problems.add(f"{at}/fields", "no more than 10 items allowed")
        for j, item in enumerate(fields):
            _text(problems, f"{at}/fields/{j}", item, 2000)
        if "accessory" in block:
            _element(problems, f"{at}/accessory", block["accessory"], action_ids)
    elif kind == "header":
        _text(problems, f"{at}/text", block.get("text"), 150, plain_only=True)
    elif kind == "context":
        elements = block.get("elements", [])
        if not 1 <= len(elements) <= 10:
            problems.add(f"{at}/elements", "must have between 1 and 10 items")
        for j, item in enumerate(elements):
            if isinstance(item, dict) and item.get("type") == "image":
                continue
            _text(problems, f"{at}/elements/{j}", item, 3000)
    elif kind == "actions":
        elements = block.get("elements", [])
        if not 1 <= len(elements) <= 25:
            problems.add(f"{at}/elements", "must have between 1 and 25 items")
        for j, item in enumerate(elements):
            _element(problems, f"{at}/elements/{j}", item, action_ids)
    elif kind == "input":
        _text(problems, f"{at}/label", block.get("label"), 2000, plain_only=True)
        if "hint" in block:
            _text(problems, f"{at}/hint", block["hint"], 2000, plain_only=True)
        if "element" not in block:
            problems.add(f"{at}/element", "is required")
        else:
            _element(problems, f"{at}/element", block["element"], action_ids)
    elif kind == "markdown":
        problems.length(f"{at}/text", block.get("text"), 12000)


def _text(problems: _Problems, at: str, obj: Any, maximum: int, *, plain_only: bool = False) -> None:
    if not isinstance(obj, dict):
        problems.add(at, "expected a text object")
        return
    allowed = ("plain_text",) if plain_only else ("plain_text", "mrkdwn")
    if obj.get("type") not in allowed:
        problems.add(f"{at}/type", f"must be one of {', '.join(allowed)}")
    text = obj.get("text")
    if not isinstance(text, str) or not text:
        problems.add(f"{at}/text", "must be more than 0 characters")
        return
    problems.length(f"{at}/text", text, maximum)


def validate_suggestions(answer: Any) -> list[str]:
    """An app's answer to a ``block_suggestion``: ``options`` (at most 100) as a menu's own."""
    problems = _Problems()
    if not isinstance(answer, dict) or not isinstance(answer.get("options"), list):
        problems.add("/options", "expected an array of options")
    else:
        _options(problems, "/options", answer["options"], 100)
    return problems.items


def _options(problems: _Problems, at: str, options: Any, limit: int) -> None:
    if len(options) > limit:
        problems.add(at, f"no more than {limit} items allowed")
    for j, option in enumerate(options):
        _text(problems, f"{at}/{j}/text", option.get("text") if isinstance(option, dict) else None, 75)
        problems.length(f"{at}/{j}/value", option.get("value") if isinstance(option, dict) else None, 150)


def _element(problems: _Problems, at: str, element: Any, action_ids: set[str]) -> None:
    if not isinstance(element, dict):
        problems.add(at, "expected an object")
        return
    kind = element.get("type")
    if kind not in ELEMENT_TYPES:
        problems.add(f"{at}/type", f"unsupported type: {kind}")
        return
    action_id = element.get("action_id")
    if action_id is not None:
        problems.length(f"{at}/action_id", action_id, 255)
        if action_id in action_ids:
            problems.add(f"{at}/action_id", f"duplicate action_id: {action_id}")
        action_ids.add(action_id)
    if kind == "button":
        _text(problems, f"{at}/text", element.get("text"), 75, plain_only=True)
        problems.length(f"{at}/value", element.get("value"), 2000)
        problems.length(f"{at}/url", element.get("url"), 3000)
        if element.get("style") not in (None, "primary", "danger"):
            problems.add(f"{at}/style", "must be one of primary, danger")
    elif kind in SELECTS_WITH_OPTIONS:
        limit = 5 if kind == "overflow" else 10 if kind in ("checkboxes", "radio_buttons") else 100
        _options(problems, f"{at}/options", element.get("options", []), limit)
    elif kind in ("external_select", "multi_external_select"):
        if "options" in element or "option_groups" in element:
            problems.add(f"{at}/options", "an external select's options come from the app's options load URL")
        least = element.get("min_query_length", 3)
        if not isinstance(least, int) or least < 0:
            problems.add(f"{at}/min_query_length", "must be a whole number, 0 or more")
    elif kind == "plain_text_input":
        problems.length(f"{at}/initial_value", element.get("initial_value"), 3000)
        max_length = element.get("max_length")
        if isinstance(max_length, int) and not 1 <= max_length <= 3000:
            problems.add(f"{at}/max_length", "must be between 1 and 3000")
