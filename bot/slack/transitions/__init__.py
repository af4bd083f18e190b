"""Transitions in Slack: the card, ``/schema transition``, its buttons and what the bot tells people."""
