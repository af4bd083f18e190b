"""What the JSON Schema parser refuses with (light to import: the CLI names it before it parses anything)."""


class JsonSchemaError(ValueError):
    """Not a JSON Schema: malformed JSON, a document its draft's meta-schema refuses, or a ``$ref`` that resolves nowhere."""
