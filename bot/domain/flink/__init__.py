"""The Flink release gate's pure parts: statements, types, plans and the five checks."""
