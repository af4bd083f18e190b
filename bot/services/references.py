"""Schema references resolved: the referenced schemas a proposal names, from the Schema Registry when the bot has one
(its version numbers), else from the bot's own versions; and the subjects that use a shared type."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlmodel import col, select

from bot.domain.references import Reference, read_references
from bot.schema_registry import RegistrationError, SchemaRegistry
from bot.services.registry import Registry
from bot.store.database import Database
from bot.store.models import Proposal, SchemaVersion, Subject

MAX_REFERENCES = 200  # referenced schemas behind one schema, transitively


class UnresolvedReference(ValueError):
    """A reference that cannot be resolved (its message says which and why); ``retryable`` when the registry was away."""

    def __init__(self, message: str, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.retryable = retryable


@dataclass(frozen=True)
class Dependent:
    """A subject whose current version uses a shared type: the proposal it came from, with its references resolved."""

    subject: Subject
    proposal: Proposal


class References:
    """Resolves references and finds who uses a shared type."""

    def __init__(self, db: Database, registry: Registry, schema_registry: SchemaRegistry | None) -> None:
        self.db, self.registry, self.schema_registry = db, registry, schema_registry

    async def resolve(self, references: Sequence[Reference]) -> list[dict[str, Any]]:
        """Every schema behind ``references``, transitively, dependencies first, each once: ``{subject, version,
        schema, name}`` (``name``: the import path or URI it is known by). UnresolvedReference names the reference that does not resolve."""
        found: dict[tuple[str, int], dict[str, Any]] = {}
        for reference in references:
            await self._visit(reference, found, ())
        return list(found.values())

    async def _visit(self, reference: Reference, found: dict[tuple[str, int], dict[str, Any]], path: tuple[tuple[str, int], ...]) -> None:
        key = (reference.subject, reference.version)
        if key in found:
            return
        if key in path:
            raise UnresolvedReference(f"reference {reference.name}: {reference.subject} version {reference.version} refers back to itself")
        if len(found) >= MAX_REFERENCES:
            raise UnresolvedReference(f"more than {MAX_REFERENCES} referenced schemas behind one schema")
        text, own = await self._version(reference)
        for inner in own:
            await self._visit(inner, found, (*path, key))
        found[key] = {"subject": reference.subject, "version": reference.version, "schema": text, "name": reference.name}

    async def _version(self, reference: Reference) -> tuple[str, list[Reference]]:
        if self.schema_registry is not None:
            try:
                return await self.schema_registry.version(reference.subject, reference.version)
            except RegistrationError as err:
                raise UnresolvedReference(f"reference {reference.name}: {err}", retryable=err.retryable) from None
        history = await self.registry.history(reference.subject)
        if not history:
            raise UnresolvedReference(f"reference {reference.name}: there is no subject {reference.subject!r} here")
        if not 1 <= reference.version <= len(history):
            raise UnresolvedReference(f"reference {reference.name}: subject {reference.subject!r} has no version {reference.version} "
                                 f"(it has 1 to {len(history)})")
        stored = history[reference.version - 1]
        proposal = await self._proposal_of(reference.subject, reference.version)
        if proposal is not None and proposal.references:  # the version as proposed: its text and its own references
            return proposal.schema_text, read_references(proposal.references)
        return stored.schema_text, []

    async def _proposal_of(self, subject: str, version: int) -> Proposal | None:
        async with self.db.session() as session:
            return (await session.exec(select(Proposal).join(SchemaVersion, col(SchemaVersion.proposal_id) == col(Proposal.id))
                                       .join(Subject, col(SchemaVersion.subject_id) == col(Subject.id))
                                       .where(Subject.name == subject, SchemaVersion.version == version))).first()

    async def pins(self, subject: str) -> list[Reference]:
        """The references of the subject's current version (a new version keeps them unless it names its own)."""
        history = await self.registry.history(subject)
        if not history:
            return []
        proposal = await self._proposal_of(subject, history[-1].number)
        return read_references(proposal.references) if proposal is not None else []

    async def dependents(self, shared: str) -> list[Dependent]:
        """Every subject whose current version uses ``shared``'s types, directly or through other references, by name."""
        async with self.db.session() as session:
            rows = (await session.exec(select(Subject, SchemaVersion.version, SchemaVersion.proposal_id)
                                       .join(SchemaVersion, col(SchemaVersion.subject_id) == col(Subject.id))
                                       .where(Subject.name != shared))).all()
            current: dict[str, tuple[Subject, int, int | None]] = {}
            for subject, number, proposal_id in rows:
                if number > current.get(subject.name, (subject, 0, None))[1]:
                    current[subject.name] = (subject, number, proposal_id)
            wanted = [proposal_id for _, _, proposal_id in current.values() if proposal_id is not None]
            proposals = {p.id: p for p in (await session.exec(select(Proposal).where(col(Proposal.id).in_(wanted)))).all()} if wanted else {}
        found = []
        for name in sorted(current):
            subject, _, proposal_id = current[name]
            proposal = proposals.get(proposal_id)
            if proposal is not None and any(entry.get("subject") == shared for entry in proposal.referenced):
                found.append(Dependent(subject, proposal))
        return found


def imports_of(referenced: Sequence[dict[str, Any]]) -> dict[str, str]:
    """The resolved referenced schemas by the names they are imported by (Protobuf import paths, JSON Schema URIs)."""
    return {str(entry.get("name", "")): entry["schema"] for entry in referenced}
