"""Avro values as Kafka carries them: raw binary, or Confluent's wire format (a zero byte, a four-byte schema
id, then the binary), with writer schemas fetched from the Schema Registry and kept."""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from typing import Any

from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError
from fastavro import parse_schema, schemaless_reader

from bot.schema_registry import without_credentials


class DecodeError(ValueError):
    """A value that cannot be read; ``kind`` is ``unknown_schema_id``, ``registry_unreachable`` or ``undecodable``."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def wire_schema_id(data: bytes) -> int | None:
    """The schema id of a Confluent-framed value, or None for anything else."""
    return int.from_bytes(data[1:5], "big") if len(data) >= 5 and data[0] == 0 else None


MAX_DEPTH = 32  # references of references


def referenced(client: SchemaRegistryClient, references: Sequence[Any], depth: int = 0,
               found: dict[tuple[str, int], dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """The schemas behind a registered schema's ``references`` (confluent-kafka's ``SchemaReference``), transitively,
    dependencies first, each once: ``{subject, version, schema, name}``. Blocking; the registry's errors pass through."""
    found = {} if found is None else found
    for reference in references:
        key = (str(reference.subject), int(reference.version or 0))
        if key in found or depth > MAX_DEPTH:
            continue
        registered = client.get_version(key[0], key[1])
        referenced(client, registered.schema.references or [], depth + 1, found)
        found[key] = {"subject": key[0], "version": key[1], "schema": registered.schema.schema_str or "", "name": str(reference.name)}
    return list(found.values())


class Registry:
    """Writer schemas by id from a Confluent-compatible registry (blocking calls: use from a worker thread)."""

    def __init__(self, url: str) -> None:
        self.url = without_credentials(url)
        self.client = SchemaRegistryClient({"url": url})
        self._schemas: dict[int, Any] = {}

    def writer(self, schema_id: int) -> Any:
        """The parsed schema ``schema_id`` names; DecodeError when the registry does not know it or cannot be reached."""
        if schema_id not in self._schemas:
            try:
                schema = self.client.get_schema(schema_id)
                named: dict[str, Any] = {}
                for entry in referenced(self.client, schema.references or []):  # their named types, dependencies first
                    parse_schema(json.loads(entry["schema"]), named_schemas=named)
                text = schema.schema_str
            except SchemaRegistryError as err:
                if err.http_status_code == 404:
                    raise DecodeError("unknown_schema_id", f"schema id {schema_id} is not in the registry at {self.url}") from None
                raise DecodeError("registry_unreachable", f"the registry at {self.url} answered {err.http_status_code}") from None
            except Exception as err:  # the HTTP library's connection errors
                raise DecodeError("registry_unreachable", f"the registry at {self.url} could not be reached ({type(err).__name__})") from None
            self._schemas[schema_id] = parse_schema(json.loads(text or "null"), named_schemas=named)
        return self._schemas[schema_id]

    def close(self) -> None:
        """Release the HTTP connections."""
        self.client.close()


class Decoder:
    """Reads values into ``reader`` (a schema as JSON): framed values through the registry (when there is one;
    without one the writer is taken to be ``reader``), raw values as written with ``reader``. Without a reader,
    framed values are read as their writer wrote them."""

    def __init__(self, reader: dict[str, Any] | None, registry: Registry | None = None) -> None:
        self.reader = parse_schema(reader) if reader is not None else None
        self.registry = registry
        self._plain: dict[int, bool] = {}

    def plain(self, schema_id: int) -> bool:
        """Whether values framed with ``schema_id`` are written with the reader schema itself (without a registry they
        are taken to be); False when the registry does not say."""
        known = self._plain.get(schema_id)
        if known is None:
            if self.registry is None:
                return self.reader is not None
            try:
                known = self.registry.writer(schema_id) == self.reader
            except DecodeError:
                return False
            self._plain[schema_id] = known
        return known

    def decode(self, data: bytes) -> Any:
        """The record; DecodeError for anything that is not one whole value."""
        schema_id = wire_schema_id(data)
        writer, body = self.reader, data
        if schema_id is not None:
            body = data[5:]
            if self.registry is not None:
                writer = self.registry.writer(schema_id)
        if writer is None:
            raise DecodeError("undecodable", "not in the Confluent wire format, and no schema to read it with")
        buffer = io.BytesIO(body)
        try:
            record = schemaless_reader(buffer, writer, self.reader if writer is not self.reader else None)
        except Exception as err:  # fastavro raises whatever the truncated or foreign bytes trip over
            raise DecodeError("undecodable", f"not a whole Avro value ({type(err).__name__})") from None
        if buffer.tell() != len(body):
            raise DecodeError("undecodable", f"{len(body) - buffer.tell()} bytes left over after the value")
        return record
