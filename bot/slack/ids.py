"""Slash commands, action ids and callback ids: every name Slack sends back to us."""

from __future__ import annotations

SCHEMA_COMMAND = "/schema"
