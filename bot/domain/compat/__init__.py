"""Schema change classification: resolution in both directions, semantic rules, modes."""
