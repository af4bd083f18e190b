"""JSON Schema: documents checked by their draft, $ref resolved, and the registry's differences."""
