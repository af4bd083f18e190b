"""Registering approved schemas in a Confluent Schema Registry, with confluent-kafka's async client."""

from __future__ import annotations

from confluent_kafka.schema_registry import AsyncSchemaRegistryClient, Schema
from confluent_kafka.schema_registry.error import SchemaRegistryError


class RegistrationError(Exception):
    """The registry refused or could not be reached; the message says which and why."""


class SchemaRegistry:
    """The registry at ``url``."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.client = AsyncSchemaRegistryClient({"url": url})

    async def register(self, subject: str, schema_text: str) -> int:
        """Register ``schema_text`` under ``subject``; the registry's schema id."""
        try:
            return int(await self.client.register_schema(subject, Schema(schema_text, "AVRO")))
        except SchemaRegistryError as err:
            raise RegistrationError(f"{self.url} refused it: {err.error_message} (HTTP {err.http_status_code}, code {err.error_code})") from None
        except Exception as err:  # connection failures come from the HTTP library underneath
            raise RegistrationError(f"{self.url} could not be reached: {type(err).__name__}: {err}") from None

    async def close(self) -> None:
        """Close the HTTP client."""
        await self.client.aclose()
