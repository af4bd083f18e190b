"""Persistence: tables, engines and migrations."""
