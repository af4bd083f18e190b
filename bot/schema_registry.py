"""Registering approved schemas in a Confluent Schema Registry, with confluent-kafka's async client."""

from __future__ import annotations

from urllib.parse import unquote, urlsplit, urlunsplit

from confluent_kafka.schema_registry import AsyncSchemaRegistryClient, Schema
from confluent_kafka.schema_registry.error import SchemaRegistryError


class RegistrationError(Exception):
    """The registry refused or could not be reached; the message says which and why (never a password).

    ``retryable``: the registry was unreachable or failed (5xx), so trying again later may succeed; a
    refusal (an incompatible or invalid schema) is final."""

    def __init__(self, message: str, *, retryable: bool) -> None:
        super().__init__(message)
        self.retryable = retryable


def without_credentials(url: str) -> str:
    """``https://user:pass@host/`` -> ``https://host/``: what may be shown and logged."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


class SchemaRegistry:
    """The registry at ``url`` (credentials in the URL are used, never shown)."""

    def __init__(self, url: str) -> None:
        self.url = without_credentials(url)
        parts = urlsplit(url)
        conf = {"url": self.url}
        if parts.username is not None:
            conf["basic.auth.user.info"] = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
        self.client = AsyncSchemaRegistryClient(conf)

    async def register(self, subject: str, schema_text: str) -> tuple[int, int | None]:
        """Register ``schema_text`` under ``subject``; the registry's schema id, and its version number under the subject
        (None when the registry did not say and could not be asked)."""
        try:
            registered = await self.client.register_schema_full_response(subject, Schema(schema_text, "AVRO"))
            version = registered.version
            if version is None:  # the Confluent API answers a registration with the id alone: ask which version it is
                try:
                    version = (await self.client.lookup_schema(subject, Schema(schema_text, "AVRO"))).version
                except Exception:  # the registration stands; the version stays unknown
                    version = None
        except SchemaRegistryError as err:
            status = err.http_status_code if isinstance(err.http_status_code, int) else 0
            raise RegistrationError(f"{self.url} refused it: {err.error_message} (HTTP {status}, code {err.error_code})",
                                    retryable=status >= 500 or status in (0, 408, 429)) from None
        except Exception as err:  # connection failures come from the HTTP library underneath
            raise RegistrationError(f"{self.url} could not be reached: {type(err).__name__}", retryable=True) from None
        if registered.schema_id is None:
            raise RegistrationError(f"{self.url} answered without a schema id", retryable=False)
        return int(registered.schema_id), version

    async def close(self) -> None:
        """Close the HTTP client."""
        await self.client.aclose()
