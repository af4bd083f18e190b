"""The monthly metadata health report, as figures: per team and overall, how healthy the metadata is and how it
moved since last month. Pure: what the store and the cluster know comes in as data; what could not be measured
is named, never guessed."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

STALE_AFTER = timedelta(days=183)  # no change for about six months: a candidate to retire
DRILL_EVERY = timedelta(days=90)  # a Flink job's state must have been restored in a drill this recently (seed 000 §8: quarterly)
OVERALL = "overall"
FORMAT_WORDS = {"AVRO": "Avro", "PROTOBUF": "Protobuf", "JSON": "JSON Schema"}


@dataclass(frozen=True)
class SubjectFacts:
    """One subject: its team, topic, when it last changed, whether the registry has it, who reads it."""

    name: str
    team: str | None
    topic: str
    last_change: datetime | None
    registered: bool | None  # None: the registry was not asked
    readers: int | None  # jobs in the lineage plus groups Kafka says read it (None: nothing known)
    undeclared: int | None = None  # groups Kafka says read it that nobody declared (None: no census)
    schema_type: str = "AVRO"  # AVRO, PROTOBUF or JSON


@dataclass(frozen=True)
class ProposalFacts:
    """One proposal of the month: its team (the subject's owner), state, times, and its acknowledgements' times."""

    team: str | None
    state: str
    created: datetime
    decided: datetime | None
    deadline: datetime | None
    acknowledged: tuple[datetime, ...] = ()
    emergency: bool = False  # shipped through a freeze by two oncall people
    unregistered: bool = False  # approved, but the Schema Registry never took it (the bot stopped trying)
    schema_type: str = "AVRO"


@dataclass(frozen=True)
class TransitionFacts:
    """One transition that ran during the month: its team (the subject's owner), deadline, and when it ended."""

    team: str | None
    created: datetime
    deadline: datetime
    closed: datetime | None


@dataclass(frozen=True)
class EpisodeFacts:
    """One SLI episode of the month."""

    team: str | None
    started: datetime
    acknowledged: datetime | None


@dataclass
class Facts:
    """Everything the report is computed from."""

    month: date  # its first day
    subjects: list[SubjectFacts] = field(default_factory=list)
    jobs: list[tuple[str | None, bool]] = field(default_factory=list)  # (owning team, black box)
    proposals: list[ProposalFacts] = field(default_factory=list)
    out_of_band: list[str | None] = field(default_factory=list)  # the team of each change detected out of band this month
    pipelines_missing: list[tuple[str, str]] = field(default_factory=list)  # (team, pipeline) missing a mandatory SLI
    episodes: list[EpisodeFacts] = field(default_factory=list)
    releases: list[tuple[str | None, tuple[str, ...]]] = field(default_factory=list)  # (team, checks that blocked) per Flink release
    drills: list[tuple[str | None, str, datetime | None]] = field(default_factory=list)  # (team, Flink job, its last completed drill)
    transitions: list[TransitionFacts] = field(default_factory=list)  # those begun before the month's end and open at its start
    renamed: list[tuple[str | None, str, str, datetime]] = field(default_factory=list)  # (team, a name the catalog declares, the
    # name a rename since gave the dataset, when): the catalog's name is kept until the catalog changes
    as_of: datetime | None = None  # when the report is computed (a month so far ends now)
    teams: list[str] = field(default_factory=list)
    unmeasured: list[str] = field(default_factory=list)  # what could not be measured, and why
    previous: dict[str, Any] | None = None  # last month's report, for trends


def month_of(text: str) -> date:
    """``2026-11`` -> 2026-11-01; ValueError for anything else."""
    try:
        year, month = (int(part) for part in text.split("-"))
        return date(year, month, 1)
    except ValueError:
        raise ValueError(f"{text!r} is not a month such as 2026-11") from None


def first_working_day(month: date) -> date:
    """The month's first Monday-to-Friday."""
    day = month
    while day.weekday() >= 5:
        day += timedelta(days=1)
    return day


def report(facts: Facts) -> dict[str, Any]:
    """The report: ``{"month", "as_of", "teams": {team: figures}, "overall": figures, "unmeasured": [...]}`` (``as_of``: when it
    was computed, ISO 8601 UTC)."""
    teams = {team: _figures(facts, team) for team in sorted(set(facts.teams))}
    return {"month": facts.month.strftime("%Y-%m"), "as_of": facts.as_of.astimezone(UTC).isoformat() if facts.as_of else None,
            "teams": teams, "overall": _figures(facts, None), "unmeasured": list(facts.unmeasured)}


def _figures(facts: Facts, team: str | None) -> dict[str, Any]:
    def mine(owner: str | None) -> bool:
        return team is None or owner == team

    month_end = (facts.month.replace(day=28) + timedelta(days=4)).replace(day=1)
    end = datetime(month_end.year, month_end.month, 1, tzinfo=UTC)
    subjects = [s for s in facts.subjects if mine(s.team)]
    retire = [{"subject": s.name, "topic": s.topic, "why": "no consumer"} for s in subjects if s.readers == 0]
    retire += [{"subject": s.name, "topic": s.topic, "why": "no change for six months"} for s in subjects
               if s.readers != 0 and s.last_change is not None and end - s.last_change > STALE_AFTER]
    registered = [s.registered for s in subjects if s.registered is not None]
    jobs = [black for owner, black in facts.jobs if mine(owner)]
    proposals = [p for p in facts.proposals if mine(p.team)]
    detected = [t for t in facts.out_of_band if mine(t)]
    waits = [(a - p.created).total_seconds() / 3600 for p in proposals for a in p.acknowledged]
    episodes = [e for e in facts.episodes if mine(e.team)]
    releases = [failed for owner, failed in facts.releases if mine(owner)]
    acked = [(e.acknowledged - e.started).total_seconds() / 60 for e in episodes if e.acknowledged is not None]
    black_share = _share(sum(jobs), len(jobs))
    previous = (facts.previous or {}).get("teams", {}).get(team) if team else (facts.previous or {}).get(OVERALL)
    before = previous.get("black_box_share") if previous else None
    undeclared = {s.topic: s.undeclared for s in subjects if s.undeclared}
    counted = [s.undeclared for s in subjects if s.undeclared is not None]
    total = sum(counted) if counted else None
    before_total = previous.get("undeclared_readers_total") if previous else None
    return {
        "retire_candidates": retire,
        "undeclared_readers": undeclared, "undeclared_readers_total": total,
        "undeclared_readers_trend": total - before_total if total is not None and before_total is not None else None,
        "registered_share": _share(sum(registered), len(registered)) if registered else None,
        "black_box_share": black_share,
        "black_box_trend": round(black_share - before, 4) if black_share is not None and before is not None else None,
        "proposals": len(proposals), "out_of_band": len(detected),
        "through_proposals_share": _share(len(proposals), len(proposals) + len(detected)),
        "expired": sum(1 for p in proposals if p.state == "expired"),
        "approved_late": sum(1 for p in proposals if p.state == "approved" and p.decided and p.deadline and p.decided > p.deadline),
        "through_freezes": sum(1 for p in proposals if p.emergency),
        "registrations_failed": sum(1 for p in proposals if p.unregistered),
        "median_hours_to_acknowledge": round(statistics.median(waits), 2) if waits else None,
        "pipelines_missing_sli": sorted(name for owner, name in facts.pipelines_missing if mine(owner)),
        "sli_episodes": len(episodes),
        "median_minutes_to_acknowledge_sli": round(statistics.median(acked), 2) if acked else None,
        "jobs_without_drill": sorted(job for owner, job, last in facts.drills if mine(owner) and (last is None or end - last > DRILL_EVERY)),
        "releases_passed": sum(1 for failed in releases if not failed),
        "releases_blocked": {check: sum(1 for failed in releases if check in failed)
                             for check in sorted({c for failed in releases for c in failed})},
        "schema_types": _schema_types(subjects, proposals),
        "catalog_renamed": [{"dataset": old, "renamed_to": new, "at": at.astimezone(UTC).isoformat()}
                            for owner, old, new, at in facts.renamed if mine(owner)],
        **_transitions([t for t in facts.transitions if mine(t.team)], min(end, facts.as_of or end), end),
    }


def _transitions(transitions: list[TransitionFacts], cut: datetime, end: datetime) -> dict[str, int]:
    """Transitions open at the month's end (or now, for the month so far), closed during it, and open past their deadline."""
    still = [t for t in transitions if t.created <= cut and (t.closed is None or t.closed > cut)]
    return {"transitions_open": len(still), "transitions_closed": sum(1 for t in transitions if t.closed is not None and t.closed <= cut),
            "transitions_overdue": sum(1 for t in still if t.deadline <= cut)}


def _schema_types(subjects: list[SubjectFacts], proposals: list[ProposalFacts]) -> dict[str, dict[str, Any]]:
    """Coverage per schema format: its subjects, the share the registry holds, the month's proposals."""
    found: dict[str, dict[str, Any]] = {}
    for kind in sorted({s.schema_type for s in subjects} | {p.schema_type for p in proposals}):
        registered = [s.registered for s in subjects if s.schema_type == kind and s.registered is not None]
        found[kind] = {"subjects": sum(1 for s in subjects if s.schema_type == kind),
                       "registered_share": _share(sum(registered), len(registered)) if registered else None,
                       "proposals": sum(1 for p in proposals if p.schema_type == kind)}
    return found


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def percent(value: float | None) -> str:
    """``0.25`` -> ``25%``; unknown -> ``n/a``."""
    return "n/a" if value is None else f"{value * 100:.0f}%"


def _moved(change: float | None, unit: str) -> str:
    if change is None:
        return ""
    return f" ({'up' if change > 0 else 'down' if change < 0 else 'unchanged'}{f' {abs(change):g}{unit}' if change else ''} since last month)"


def describe(figures: dict[str, Any]) -> list[tuple[str, str]]:
    """One team's (or the overall) figures as sentences, each with the emoji code Slack shows before it."""
    retire, renamed = figures["retire_candidates"], figures.get("catalog_renamed") or []  # (reports kept before it have none)
    trend = figures.get("black_box_trend")
    moved = _moved(round(trend * 100) if trend is not None else None, " pts")
    hours, minutes = figures["median_hours_to_acknowledge"], figures["median_minutes_to_acknowledge_sli"]
    return [
        (":wastebasket:", f"Candidates to retire: {len(retire)}" + (": " + ", ".join(f"`{r['subject']}` ({r['why']})" for r in retire[:10]) if retire else "")),
        (":label:", f"Topics with a registered schema: {percent(figures['registered_share'])}"),
        (":card_index_dividers:", "Schema formats: " + ("; ".join(
            f"{FORMAT_WORDS.get(kind, kind)} {row['subjects']} subject{'s' if row['subjects'] != 1 else ''}"
            + (f" ({percent(row['registered_share'])} registered)" if row["registered_share"] is not None else "")
            + f", {row['proposals']} proposal{'s' if row['proposals'] != 1 else ''}" for kind, row in (figures.get("schema_types") or {}).items())
            or "none")),
        (":detective:", "Consumer groups nobody declared: " + ("n/a" if figures.get("undeclared_readers_total") is None else
                         f"{figures['undeclared_readers_total']}" + _moved(figures.get("undeclared_readers_trend"), "")
                         + "".join(f"; `{topic}`: {count}" for topic, count in sorted(figures["undeclared_readers"].items())[:10]))),
        (":black_large_square:", f"Lineage through black boxes: {percent(figures['black_box_share'])}{moved}"),
        (":pencil2:", "Datasets renamed since the catalog named them (OpenLineage; the catalog's name stays until it changes): "
                      + (", ".join(f"`{r['dataset']}` → `{r['renamed_to']}` ({r['at'][:10]})" for r in renamed[:10]) or "none")),
        (":twisted_rightwards_arrows:", f"Transitions: {figures.get('transitions_open', 0)} open, {figures.get('transitions_closed', 0)} closed "
                                        f"this month, {figures.get('transitions_overdue', 0)} overdue"),
        (":memo:", f"Changes through proposals: {figures['proposals']} of {figures['proposals'] + figures['out_of_band']} "
                   f"({percent(figures['through_proposals_share'])}); {figures['out_of_band']} detected out of band"),
        (":hourglass:", f"Proposals expired: {figures['expired']}; approved late: {figures['approved_late']}; median time to acknowledge: "
                        + (f"{hours:g} h" if hours is not None else "n/a")),
        (":snowflake:", f"Changes shipped through freezes (emergencies): {figures.get('through_freezes', 0)}; approved versions the Schema "
                        f"Registry did not take: {figures.get('registrations_failed', 0)}"),
        (":bar_chart:", "Pipelines missing a mandatory SLI: " + (", ".join(figures["pipelines_missing_sli"]) or "none")),
        (":rotating_light:", f"SLI episodes: {figures['sli_episodes']}; median time to acknowledge: " + (f"{minutes:g} min" if minutes is not None else "n/a")),
        (":fire_extinguisher:", "Flink jobs without a completed restore drill in 90 days (`bot flink drill JOB`): "
                                + (", ".join(f"`{job}`" for job in figures.get("jobs_without_drill", [])[:20]) or "none")),
        (":rocket:", f"Flink releases through the gate: {figures.get('releases_passed', 0)} passed; blocked by "
                     + (", ".join(f"{check} {count}" for check, count in (figures.get("releases_blocked") or {}).items()) or "none")),
    ]
