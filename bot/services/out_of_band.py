"""Out-of-band change detection: the registry is the source of truth only if nothing goes around it. A watcher
lists the registry's subjects and versions and, where Kafka is configured, the schema ids producers really write
on each catalog topic; anything no approved version accounts for (same schema in every attribute, or the registry
id the bot registered) becomes one alert in the subject's channel, with its classification against the last
approved version and its impact, and buttons to open a retroactive proposal or to acknowledge it as known.

Each schema is judged once (a row per registry version or topic schema id); an unreachable registry or broker
is reported once, and again when it answers."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from confluent_kafka.schema_registry import SchemaRegistryClient
from sqlalchemy import update
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select

from bot.domain.compat.analysis import analyse, fingerprints
from bot.domain.compat.formats import paths_of
from bot.domain.references import read_references
from bot.kafka.out_of_band import Registered, new_versions, schema_ids, schema_text
from bot.services import leases
from bot.services.audit import record as audit
from bot.services.lineage import LineageService
from bot.services.outbox import Outbox
from bot.services.proposals import ProposalError, Proposals, names_of, topic_of
from bot.services.registry import Registry
from bot.store.database import Database, same
from bot.store.models import CatalogSetting, ObservedSchema, SchemaVersion, Subject, Transition
from bot.workers import off_loop

log = logging.getLogger(__name__)
OOB_ALERT, OOB_STATUS = "oob.alert", "oob.status"
REGISTRY, KAFKA, TRANSITION = "registry", "kafka", "transition"


class OutOfBandError(ValueError):
    """A request about an observed schema that cannot be served; the message is for people."""


class OutOfBand:
    """The watcher and what people do with its alerts."""

    def __init__(self, db: Database, lineage: LineageService, registry: Registry, proposals: Proposals, outbox: Outbox,
                 schema_registry_url: str | None, bootstrap: str | None, owner: str, changes_channel: str,
                 clock: Callable[[], datetime]) -> None:
        self.db, self.lineage, self.registry, self.proposals, self.outbox = db, lineage, registry, proposals, outbox
        self.bootstrap, self.owner, self.changes_channel, self.clock = bootstrap, owner, changes_channel, clock
        self.client = SchemaRegistryClient({"url": schema_registry_url, "timeout": 10}) if schema_registry_url else None

    def close(self) -> None:
        """Release the registry client's connections."""
        if self.client is not None:
            self.client.close()

    async def scheduled(self, every: timedelta) -> int:
        """The periodic watch, by whichever replica holds the lease; how many unaccounted schemas were found."""
        if not await leases.hold(self.db, "out-of-band", self.owner, every * 2, self.clock()):
            return 0
        return await self.watch()

    async def watch(self) -> int:
        """One pass over the registry and the catalog's topics; how many unaccounted schemas were newly found."""
        found = 0
        if self.client is not None:
            found += await self._registry_pass(self.client)
        if self.bootstrap:
            found += await self._kafka_pass(self.bootstrap)
        return found

    async def _registry_pass(self, client: SchemaRegistryClient) -> int:
        async with self.db.session() as session:
            seen = {(r.subject, r.version) for r in (await session.exec(select(ObservedSchema).where(col(ObservedSchema.source) == REGISTRY))).all()}
        try:
            versions: list[Registered] = await asyncio.to_thread(new_versions, client, seen)
        except Exception as err:  # the registry away or refusing: said once, the pass skipped
            await self._reachable(REGISTRY, f"the Schema Registry could not be read ({type(err).__name__}: {str(err)[:200]})")
            return 0
        await self._reachable(REGISTRY, None)
        known = set(await self.registry.names())
        return sum([await self._observe(v.subject, REGISTRY, v.schema_id, v.version, v) for v in versions if v.subject in known])

    async def _kafka_pass(self, bootstrap: str) -> int:
        async with self.db.session() as session:
            subjects = list((await session.exec(select(Subject))).all())
            seen = {(r.subject, r.schema_id) for r in (await session.exec(select(ObservedSchema).where(col(ObservedSchema.source) == KAFKA))).all()}
            running = {t.subject_id: t for t in (await session.exec(select(Transition).where(col(Transition.phase).in_(["migrate", "contract"])))).all()}
        found = 0
        for subject in subjects:
            if subject.name.endswith("-key"):
                continue
            try:
                ids: set[int] = await asyncio.to_thread(schema_ids, bootstrap, topic_of(subject))
            except Exception as err:  # the broker away: said once, the pass skipped
                await self._reachable(KAFKA, f"Kafka could not be read ({type(err).__name__}: {str(err)[:200]})")
                return found
            for schema_id in sorted(ids):
                if (subject.name, schema_id) not in seen:
                    registered = await asyncio.to_thread(schema_text, self.client, schema_id) if self.client is not None else None
                    found += await self._observe(subject.name, KAFKA, schema_id, -1, registered)
            if subject.id in running:
                found += await self._one_sided(subject, running[subject.id], ids)
        await self._reachable(KAFKA, None)
        return found

    async def _one_sided(self, subject: Subject, transition: Transition, ids: set[int]) -> int:
        """During a transition producers write both sides of its mapping: a schema id on the topic with only one side (a
        producer not yet on the expand version, or one already on the target) is alerted, once per transition and id."""
        if transition.id is None or self.client is None:
            return 0
        async with self.db.session() as session:
            judged = set((await session.exec(select(ObservedSchema.schema_id).where(
                col(ObservedSchema.subject) == subject.name, col(ObservedSchema.source) == TRANSITION,
                col(ObservedSchema.version) == transition.id))).all())
        found = 0
        for schema_id in sorted(ids - judged):
            registered = await asyncio.to_thread(schema_text, self.client, schema_id)
            if registered is None:
                continue
            refs = {str(e.get("name", "")): e["schema"] for e in registered.referenced}
            paths = set(await off_loop(paths_of, registered.schema_type, registered.text, refs))
            sides = [(m["old"], m["new"], m["old"] in paths, m["new"] in paths) for m in transition.mapping]
            lopsided = [(old, new, has_old) for old, new, has_old, has_new in sides if has_old != has_new]
            if not lopsided:
                continue
            changes = [{"rule": "TRANSITION_ONE_SIDE", "path": old if has_old else new, "level": "breaking",
                        "message": f"Producers write schema id {schema_id} on {topic_of(subject)}, which has {old if has_old else new} but not "
                                   f"{new if has_old else old}: during transition #{transition.id} both are written, so readers of "
                                   f"{new if has_old else old} get nothing from these records."} for old, new, has_old in lopsided]
            row = ObservedSchema(subject=subject.name, source=TRANSITION, schema_id=schema_id, version=transition.id, accounted=False,
                                 level="breaking", seen_at=self.clock(), channel=subject.channel or self.changes_channel,
                                 detail={"changes": changes, "owners": [subject.owner_team] if subject.owner_team else [],
                                         "note": f"transition #{transition.id} ({', '.join(m['old'] + ' → ' + m['new'] for m in transition.mapping)})"})
            async with self.db.session() as session:
                session.add(row)
                try:
                    await session.flush()
                except IntegrityError:
                    continue  # another replica judged it first
                self.outbox.add(session, OOB_ALERT, f"oob:{subject.name}", {"observed": row.id})
                await session.commit()
            found += 1
        if found:
            self.outbox.wake()
        return found

    async def _observe(self, subject_name: str, source: str, schema_id: int, version: int, registered: Registered | None) -> int:
        """Judge one schema seen outside (once): 1 when no approved version accounts for it (and an alert is owed)."""
        text = registered.text if registered is not None else None
        refs = [entry["schema"] for entry in registered.referenced] if registered is not None else []
        names = names_of(registered.referenced) if registered is not None else []
        subject = await self.registry.subject(subject_name)
        assert subject is not None
        foreign = registered is not None and registered.schema_type != subject.format  # the registry's type is not the catalog's
        async with self.db.session() as session:
            approved = list((await session.exec(select(SchemaVersion).where(col(SchemaVersion.subject_id) == subject.id)
                                                .order_by(col(SchemaVersion.version)))).all())
        [print_] = await off_loop(fingerprints, [text or ""], refs, subject.format, names) if text and not foreign else [None]
        accounted = any(v.registry_id == schema_id or (print_ is not None and v.fingerprint == print_) for v in approved)
        detail: dict[str, Any] = {}
        level = None
        if not accounted and foreign:
            assert registered is not None
            detail = {"error": f"the registry holds a {registered.schema_type} schema for this subject, whose schema_type is {subject.format} "
                               "in the catalog: every reader expecting the catalog's format fails"}
            level = "breaking"
        elif not accounted and text:
            analysis = await off_loop(analyse, [v.schema_text for v in approved], text, subject.compatibility, refs, subject.format, names)
            if analysis.verdict is not None:
                level = str(analysis.verdict.level)
                impact = await self.proposals.impact_of(subject_name, analysis)
                detail = {"changes": [f.as_json() for f in analysis.verdict.findings][:40], "owners": impact.get("owners", []),
                          "note": impact.get("note"), "against": approved[-1].version if approved else None}
            else:
                detail = {"error": analysis.error}
        elif not accounted:
            detail = {"error": "the registry does not know this schema id, so it cannot be classified"}
        row = ObservedSchema(subject=subject_name, source=source, schema_id=schema_id, version=version, fingerprint=print_, accounted=accounted,
                             level=level, detail=detail, seen_at=self.clock(), channel=None if accounted else (subject.channel or self.changes_channel))
        async with self.db.session() as session:
            session.add(row)
            try:
                await session.flush()
            except IntegrityError:
                return 0  # another replica judged it first
            if not accounted:
                self.outbox.add(session, OOB_ALERT, f"oob:{subject_name}", {"observed": row.id})
            await session.commit()
        self.outbox.wake()
        return 0 if accounted else 1

    async def _reachable(self, source: str, problem: str | None) -> None:
        """Say once that ``source`` cannot be read (``problem``), and once that it can again."""
        name = f"watch:{source}"
        async with self.db.session() as session:
            row = await session.get(CatalogSetting, name) or CatalogSetting(name=name, value={})
            down = bool(row.value.get("down"))
            if (problem is not None) == down:
                return
            row.value = {"down": problem is not None, "problem": problem, "since": self.clock().isoformat()}
            session.add(row)
            text = (f":warning: Out-of-band change detection is blind: {problem}. Changes made meanwhile are found when it answers again."
                    if problem else f":white_check_mark: Out-of-band change detection reads the {'Schema Registry' if source == REGISTRY else 'Kafka topics'} again.")
            self.outbox.add(session, OOB_STATUS, f"oob-status:{source}", {"channel": self.changes_channel, "text": text})
            await session.commit()
        self.outbox.wake()

    # --- people -----------------------------------------------------------------------------------

    async def observed(self, number: int) -> ObservedSchema:
        """One observed schema; OutOfBandError when there is none."""
        async with self.db.session() as session:
            row = await session.get(ObservedSchema, number)
        if row is None:
            raise OutOfBandError(f"there is no unapproved change #{number}")
        return row

    async def acknowledge(self, number: int, user: str) -> ObservedSchema:
        """Mark an unapproved change as known (once); its alert says who."""
        row = await self.observed(number)
        async with self.db.session() as session:
            moved = await session.exec(update(ObservedSchema).where(col(ObservedSchema.id) == number, col(ObservedSchema.acknowledged_by).is_(None))
                                       .values(acknowledged_by=user))
            if not getattr(moved, "rowcount", 0):
                raise OutOfBandError(f"this change was already acknowledged by <@{row.acknowledged_by}>")
            audit(session, user, "slack", "acknowledged out-of-band change", "subject", row.subject, {"observed": number})
            self.outbox.add(session, OOB_ALERT, f"oob:{row.subject}", {"observed": number})
            await session.commit()
        self.outbox.wake()
        return await self.observed(number)

    async def retroactive(self, number: int, user: str) -> int:
        """Open a proposal for the schema found out of band (it then goes through the usual acknowledgements)."""
        row = await self.observed(number)
        if row.proposal_id is not None:
            raise OutOfBandError(f"proposal #{row.proposal_id} was already opened for it")
        registered = await asyncio.to_thread(schema_text, self.client, row.schema_id) if self.client is not None and row.schema_id >= 0 else None
        if registered is None or not registered.text:
            raise OutOfBandError("the registry does not give this schema, so no proposal can carry it")
        where = f"registry version {row.version}" if row.source == REGISTRY else f"schema id {row.schema_id} on the topic"
        try:
            view = await self.proposals.propose(row.subject, registered.text, user, references=read_references(list(registered.references)), schema_type=registered.schema_type,
                                                notes=f"Retroactive: found out of band ({where}), not approved before.")
        except ProposalError as err:
            raise OutOfBandError(str(err)) from None
        async with self.db.session() as session:
            await session.exec(update(ObservedSchema).where(col(ObservedSchema.id) == number).values(proposal_id=view.id))
            self.outbox.add(session, OOB_ALERT, f"oob:{row.subject}", {"observed": number})
            await session.commit()
        self.outbox.wake()
        return view.id

    async def save_message(self, number: int, channel: str, ts: str, replacing: str | None = None) -> bool:
        """Remember where the alert was posted: the first time, or in place of ``replacing`` (deleted in Slack); False when
        another post got there first."""
        async with self.db.session() as session:
            moved = await session.exec(update(ObservedSchema).where(col(ObservedSchema.id) == number, same(col(ObservedSchema.message_ts), replacing))
                                       .values(message_channel=channel, message_ts=ts))
            await session.commit()
        return bool(getattr(moved, "rowcount", 0))
