"""Pages beyond Slack: what a page's events mean to a team's receivers, and what each receiver is sent.

PagerDuty's Events API v2: ``trigger`` when a page opens (or escalates, or pages on its own), ``acknowledge`` when
someone acknowledges it, ``resolve`` when it ends; the ``dedup_key`` is the episode's fingerprint, so a retried
trigger is the same incident. Back from PagerDuty (its V3 webhooks, signed): an incident acknowledged there
acknowledges the episode; one resolved there is said in the thread (the episode ends with its samples, not before). A generic webhook gets Alertmanager's webhook JSON (version 4): ``firing`` and
``resolved``, so routing already written for Alertmanager keeps working.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from bot.domain.sli.evaluator import Kind, Level

TRIGGERS = frozenset({Kind.OPENED, Kind.ESCALATED, Kind.UNFOLDED, Kind.UNSILENCED})
PAGERDUTY, WEBHOOK = "pagerduty", "webhook"
FROM_PAGERDUTY = " (in PagerDuty)"  # ends the name of someone who acted in PagerDuty (never echoed back to it)


def action(kind: Kind, level: Level, held: bool, silenced: bool, triggered: bool, actor: str | None = None) -> str | None:
    """What a receiver is told of one event (``triggered``: it was told of this episode before), or None."""
    if kind in TRIGGERS and level is Level.PAGE and not held and not silenced and not triggered:
        return "trigger"
    if kind is Kind.ACKNOWLEDGED and triggered and not (actor or "").endswith(FROM_PAGERDUTY):
        return "acknowledge"
    if kind is Kind.RESOLVED and triggered:
        return "resolve"
    return None


def labels(pipeline: str, sli: str, team: str) -> dict[str, str]:
    """The alert's labels, as Alertmanager routes on them."""
    return {"alertname": "ChangeOpsSLI", "pipeline": pipeline, "sli": sli, "team": team, "severity": "page"}


def pagerduty_event(act: str, routing_key: str, fingerprint: str, summary: str, pipeline: str, sli: str, team: str,
                    started: datetime, details: dict[str, Any], link: str | None) -> dict[str, Any]:
    """One PagerDuty Events API v2 event."""
    event: dict[str, Any] = {"routing_key": routing_key, "event_action": act, "dedup_key": fingerprint, "client": "ChangeOps"}
    if act == "trigger":
        event["payload"] = {"summary": summary[:1024], "source": pipeline, "severity": "critical", "timestamp": started.isoformat(),
                            "component": sli, "group": team, "class": sli, "custom_details": details}
        if link:
            event["links"] = [{"href": link, "text": "The alert in Slack"}]
    return event


def alertmanager_webhook(act: str, receiver: str, fingerprint: str, summary: str, pipeline: str, sli: str, team: str,
                         started: datetime, ended: datetime | None, details: dict[str, Any], link: str | None) -> dict[str, Any]:
    """Alertmanager's webhook JSON (version 4) for one alert: ``firing`` on trigger, ``resolved`` on resolve."""
    status = "resolved" if act == "resolve" else "firing"
    alert_labels = labels(pipeline, sli, team)
    annotations = {"summary": summary, **{k: str(v) for k, v in details.items()}}
    alert = {"status": status, "labels": alert_labels, "annotations": annotations, "startsAt": started.isoformat(),
             "endsAt": ended.isoformat() if ended is not None and status == "resolved" else "0001-01-01T00:00:00Z",
             "generatorURL": link or "", "fingerprint": fingerprint}
    group = {"alertname": alert_labels["alertname"], "pipeline": pipeline}
    return {"version": "4", "groupKey": "{}:{" + ",".join(f'{k}="{v}"' for k, v in sorted(group.items())) + "}", "truncatedAlerts": 0,
            "status": status, "receiver": receiver, "groupLabels": group, "commonLabels": alert_labels,
            "commonAnnotations": annotations, "externalURL": link or "", "alerts": [alert]}


def signed(body: bytes, header: str, secrets: Sequence[str]) -> bool:
    """Whether ``X-PagerDuty-Signature`` (``v1=<hex>`` entries, comma-separated) holds the HMAC-SHA256 of the raw body under
    one of ``secrets``, compared in constant time."""
    given = [part.strip()[3:] for part in header.split(",") if part.strip().startswith("v1=")]
    ok = False
    for secret in secrets:
        expected = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
        for signature in given:
            ok |= hmac.compare_digest(expected, signature)
    return ok


def pagerduty_change(payload: Any) -> tuple[str, str, str] | None:
    """``(event type, incident key, who)`` of a V3 webhook's incident acknowledged or resolved, or None for anything else
    (other events, other resources, incidents without a key)."""
    event = payload.get("event") if isinstance(payload, dict) else None
    if not isinstance(event, dict) or event.get("event_type") not in ("incident.acknowledged", "incident.resolved"):
        return None
    data, agent = event.get("data"), event.get("agent")
    key = data.get("incident_key") if isinstance(data, dict) else None
    if not isinstance(key, str) or not key:
        return None
    who = agent.get("summary") if isinstance(agent, dict) else None
    return str(event["event_type"]), key, (who if isinstance(who, str) and who else "someone")[:80] + FROM_PAGERDUTY
