"""Registering approved schemas in a Confluent Schema Registry, with confluent-kafka's async client."""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import unquote, urlsplit, urlunsplit

from confluent_kafka.schema_registry import AsyncSchemaRegistryClient, Schema, SchemaReference
from confluent_kafka.schema_registry.error import SchemaRegistryError

from bot.domain.references import Reference


class RegistrationError(Exception):
    """The registry refused or could not be reached; the message says which and why (never a password).

    ``retryable``: the registry was unreachable or failed (5xx), so trying again later may succeed; a
    refusal (an incompatible or invalid schema) is final."""

    def __init__(self, message: str, *, retryable: bool) -> None:
        super().__init__(message)
        self.retryable = retryable


# What a refusal means, by the registry's error code (Confluent's codes, which Apicurio's Confluent API answers too);
# never by its text, which differs between registries.
REFUSALS = {
    409: "incompatible with an earlier version under {mode}",
    42201: "the registry does not take it as a valid schema (or a reference it names does not resolve)",
    42202: "the registry refused the schema id",
    42203: "the registry refused the compatibility level {mode}",
    40401: "the subject does not exist in the registry",
    40402: "a version it refers to does not exist in the registry",
    40403: "a schema it refers to does not exist in the registry",
}


def refusal(status: int, code: int, mode: str) -> str:
    """The reason for a refusal in the bot's words, from the HTTP status and the registry's error code."""
    if code in REFUSALS:
        return REFUSALS[code].format(mode=mode)
    if status == 409:
        return REFUSALS[409].format(mode=mode)
    if status in (401, 403):
        return "the registry refused the bot's credentials"
    if status == 422:
        return REFUSALS[42201]
    if status >= 500 or status in (0, 408, 429):
        return "the registry failed to answer"
    return "the registry refused the request"


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

    async def register(self, subject: str, schema_text: str, mode: str, *, references: Sequence[Reference] = (),
                       lifted: bool = False, schema_type: str = "AVRO") -> tuple[int, int | None]:
        """Register ``schema_text`` (with its ``references``, in order) under ``subject``, with the subject's
        compatibility set to ``mode`` first, so the registry checks what the bot checked whatever its own default.
        ``lifted``: an approved change that fails ``mode`` (every affected team acknowledged the break) is registered
        with the subject at NONE, and ``mode`` is set again right after. The registry's schema id, and its version
        number under the subject (None when the registry did not say and could not be asked). ``schema_type``: the
        registry's ``AVRO``, ``PROTOBUF`` or ``JSON``."""
        schema = Schema(schema_text, schema_type, [SchemaReference(r.name, r.subject, r.version) for r in references])
        try:
            exists = await self._configure(subject, "NONE" if lifted else mode)
            try:
                registered = await self.client.register_schema_full_response(subject, schema)
            finally:
                if lifted or not exists:
                    await self._configure(subject, mode)
            version = registered.version
            if version is None:  # the Confluent API answers a registration with the id alone: ask which version it is
                try:
                    version = (await self.client.lookup_schema(subject, schema)).version
                except Exception:  # the registration stands; the version stays unknown
                    version = None
        except SchemaRegistryError as err:
            status = err.http_status_code if isinstance(err.http_status_code, int) else 0
            code = err.error_code if isinstance(err.error_code, int) else 0
            raise RegistrationError(f"{self.url} refused it: {refusal(status, code, mode)} (HTTP {status}, error code {code})",
                                    retryable=status >= 500 or status in (0, 408, 429)) from None
        except Exception as err:  # connection failures come from the HTTP library underneath
            raise RegistrationError(f"{self.url} could not be reached: {type(err).__name__}", retryable=True) from None
        if registered.schema_id is None:
            raise RegistrationError(f"{self.url} answered without a schema id", retryable=False)
        return int(registered.schema_id), version

    async def version(self, subject: str, version: int) -> tuple[str, list[Reference]]:
        """A registered version's schema text and its own references; RegistrationError when the registry does not
        have it (``retryable`` False) or cannot be reached (True)."""
        try:
            found = await self.client.get_version(subject, version)
        except SchemaRegistryError as err:
            status = err.http_status_code if isinstance(err.http_status_code, int) else 0
            code = err.error_code if isinstance(err.error_code, int) else 0
            if code == 40401 or (status == 404 and code != 40402):
                raise RegistrationError(f"subject {subject!r} is not in the Schema Registry", retryable=False) from None
            if code == 40402 or status in (404, 422):
                raise RegistrationError(f"subject {subject!r} has no version {version} in the Schema Registry", retryable=False) from None
            raise RegistrationError(f"{self.url} {refusal(status, code, '')} (HTTP {status}, error code {code})",
                                    retryable=status >= 500 or status in (0, 408, 429)) from None
        except Exception as err:
            raise RegistrationError(f"{self.url} could not be reached: {type(err).__name__}", retryable=True) from None
        schema = found.schema
        if schema is None or schema.schema_str is None:
            raise RegistrationError(f"{self.url} answered version {version} of {subject!r} without its schema", retryable=False)
        return schema.schema_str, [Reference(str(r.name), str(r.subject), int(r.version or 0)) for r in schema.references or []]

    async def _configure(self, subject: str, level: str) -> bool:
        """Set the subject's compatibility; False when the subject does not exist yet (Apicurio 2.x keeps no level for
        it then: the first version has nothing to be compatible with, and the level is set after it)."""
        try:
            await self.client.set_compatibility(subject, level)
        except SchemaRegistryError as err:
            if err.error_code == 40401:
                return False
            raise
        return True

    async def close(self) -> None:
        """Close the HTTP client."""
        await self.client.aclose()
