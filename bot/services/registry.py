"""The bot's own schema registry: every accepted version of every subject, numbered from 1."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import update
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from bot.domain.avro.model import Schema
from bot.domain.avro.parse import parse
from bot.domain.compat.analysis import stored_form
from bot.services.lineage import bump_revision
from bot.store.database import Database
from bot.store.models import SchemaVersion, Subject


@dataclass(frozen=True)
class Version:
    """One stored version."""

    number: int
    schema_text: str
    fingerprint: str

    @property
    def schema(self) -> Schema:
        """The version, parsed."""
        return parse(self.schema_text)


class Registry:
    """Subjects and their versions, in the database."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def subject(self, name: str) -> Subject | None:
        """The subject called ``name``."""
        async with self.db.session() as session:
            return (await session.exec(select(Subject).where(Subject.name == name))).first()

    async def owners(self) -> dict[str, str | None]:
        """Every subject's owning team."""
        async with self.db.session() as session:
            return dict((await session.exec(select(Subject.name, Subject.owner_team))).all())

    async def names(self) -> list[str]:
        """Every subject's name, sorted."""
        async with self.db.session() as session:
            return sorted((await session.exec(select(Subject.name))).all())

    async def history(self, name: str) -> list[Version]:
        """Every version of a subject, oldest first (empty for an unknown subject)."""
        async with self.db.session() as session:
            rows = (await session.exec(select(SchemaVersion).join(Subject, col(SchemaVersion.subject_id) == col(Subject.id))
                                       .where(Subject.name == name).order_by(col(SchemaVersion.version)))).all()
        return [Version(r.version, r.schema_text, r.fingerprint) for r in rows]

    async def record(self, name: str, schema: Schema, proposal_id: int | None = None) -> int:
        """Store ``schema`` as the subject's next version (the subject is created if new).

        Recording a schema identical to the newest version stores nothing and returns that version.
        Writers of one subject take turns (the subject row is locked on PostgreSQL; SQLite has one writer),
        and a collision (two writers creating a new subject) is retried.
        """
        text, digest = stored_form(schema)
        for _ in range(5):
            async with self.db.session() as session:
                try:
                    number = await self._append(session, name, text, digest, proposal_id)
                    await session.commit()
                except IntegrityError:
                    await session.rollback()
                    continue
                return number
        raise RuntimeError(f"could not record a version of {name}: too many concurrent writers")

    async def append(self, session: AsyncSession, name: str, text: str, digest: str, proposal_id: int) -> int:
        """Store a version of an existing subject in the caller's transaction (a proposal's approval)."""
        return await self._append(session, name, text, digest, proposal_id)

    async def note_registry_id(self, session: AsyncSession, name: str, number: int, registry_id: int) -> None:
        """Remember the Schema Registry's id of a stored version (in the caller's transaction)."""
        subject = (await session.exec(select(Subject).where(Subject.name == name))).one()
        await session.exec(update(SchemaVersion).where(col(SchemaVersion.subject_id) == subject.id, col(SchemaVersion.version) == number)
                           .values(registry_id=registry_id))

    async def _append(self, session: AsyncSession, name: str, text: str, digest: str, proposal_id: int | None) -> int:
        query = select(Subject).where(Subject.name == name)
        if self.db.engine.dialect.name == "postgresql":
            query = query.with_for_update()  # writers of one subject take turns instead of colliding
        subject = (await session.exec(query)).first()
        if subject is None:
            subject = Subject(name=name)
            session.add(subject)
            await session.flush()
        latest = (await session.exec(select(SchemaVersion).where(SchemaVersion.subject_id == subject.id)
                                     .order_by(col(SchemaVersion.version).desc()))).first()
        if latest is not None and latest.fingerprint == digest:
            return latest.version
        assert subject.id is not None
        number = latest.version + 1 if latest else 1
        session.add(SchemaVersion(subject_id=subject.id, version=number, schema_text=text, fingerprint=digest, proposal_id=proposal_id))
        await session.flush()
        await bump_revision(session)
        return number
