"""The proposal card: level, findings, impact, teams and buttons, folded to fit Slack's limits.

However large the schema or the impact, a card has at most a few dozen blocks, every section stays
under 3,000 characters, and long lists end with "... and N more" (the CLI and the API give the rest).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from bot.domain.approvals import UNOWNED, Decision, State
from bot.domain.compat.classify import Mode
from bot.domain.readers import failed_note
from bot.services.proposals import TYPE_WORDS, ProposalView
from bot.slack import ids
from bot.slack.readers.actions import readers_title
from bot.slack.render import Reply, escape, fold, mention, section

LEVEL_MARK = {"safe": ":large_green_circle:", "compatible": ":large_yellow_circle:", "breaking": ":red_circle:"}
STATE_TEXT = {
    State.PENDING: "waiting for acknowledgements", State.APPROVED: "approved", State.REJECTED: "rejected",
    State.CHANGES_REQUESTED: "changes requested", State.EXPIRED: "expired", State.WITHDRAWN: "withdrawn",
}
MAX_SECTIONS_PER_PART = 3
MAX_ITEMS = 40
ENCLOSED_SHOWN = 5  # changed paths answered for their struct, named one by one
MAX_UNDECLARED = 5  # undeclared groups shown with a menu each (the rest counted)


def buf_line(buf: dict[str, Any] | None) -> list[str]:
    """Buf's verdict beside the registry's, for a Protobuf subject whose catalog entry names Buf's rules."""
    if not buf:
        return []
    if buf.get("error"):
        return [f"Buf ({escape(buf['rules'])}): could not compare: {escape(buf['error'])}"]
    count = len(buf.get("findings", []))
    return [f"Buf ({escape(buf['rules'])}): " + (f":no_entry: *{count} breaking change{'s' if count != 1 else ''}*" if count else "no breaking change")]


def _buf_finding(finding: dict[str, Any]) -> str:
    where = f" line {finding['line']}:{finding['column']}" if finding["line"] else ""
    return f"• `{escape(finding['rule'])}`{where} — {escape(finding['message'])}"


def card(view: ProposalView, *, team: str | None = None, clashes: list[str] | None = None) -> Reply:
    """The card for channels (``team`` None) or for one team's members in a DM; ``clashes``: its calendar conflicts."""
    p = view.proposal
    level = p.level
    title = f"Schema change #{view.id} · {view.subject.name} · {level.upper()}"
    blocks: list[dict[str, Any]] = [{"type": "header", "text": {"type": "plain_text", "text": title[:150]}}]  # plain text: no markup
    facts = [f"{LEVEL_MARK.get(level, '')} *{level}* under {p.mode} (backward {'ok' if p.backward else 'fails'}, "
             f"forward {'ok' if p.forward else 'fails'}) · {TYPE_WORDS.get(p.schema_type, p.schema_type)} schema",
             f"Proposed by {mention(p.proposer)} · *{STATE_TEXT[view.state]}*"]
    facts += buf_line(p.buf)
    own = p.impact.get("own_level")
    if own and own != level:
        facts.insert(1, f"Its own change is *{escape(own)}*; *{level}* for a subject that uses its types (below)")
    if p.version:
        facts.append(f"Recorded as version {p.version} of {escape(view.subject.name)}")
    facts += registry_line(view)
    if p.window_start:
        facts.append(f"Planned window: {_when(p.window_start)} → {_when(p.window_end)} (booked in the change calendar)")
    else:
        facts.append("No planned window: nothing is booked in the change calendar")
    facts += [f":warning: Calendar conflict: {escape(reason)}" for reason in (clashes or [])[:5]]
    if len(clashes or []) > 5:
        facts.append(f":warning: …and {len(clashes or []) - 5} more calendar conflicts (`/calendar` lists them)")
    if p.held and view.state is State.PENDING:
        facts.append(f":snowflake: *Approved by every team but held:* {escape(p.held)}")
    facts += emergency_lines(view)
    if p.deadline and view.state is State.PENDING:
        facts.append(f"Deadline: {_when(p.deadline)}{' (extended)' if p.extended else ''}")
    if p.revision_of:
        facts.append(f"Revises #{p.revision_of}")
    if p.references:
        facts.append("References: " + ", ".join(f"`{escape(r['name'])}` → {escape(r['subject'])} version {r['version']}" for r in p.references[:10])
                     + (f" and {len(p.references) - 10} more" if len(p.references) > 10 else ""))
    blocks.append(section("\n".join(facts)))
    blocks += _part("*Changes*", [f"• `{escape(f['rule'])}` `{escape(f['path'])}` — {escape(f['message'])}" for f in p.findings] or ["• no change"])
    if p.buf and p.buf.get("findings"):
        blocks += _part(f"*Buf's findings ({escape(p.buf['rules'])})*", [_buf_finding(f) for f in p.buf["findings"]])
    kept = len(p.impact.get("impacted", []))
    blocks += _part("*Impact*", _impact_lines(p.impact), unlisted=p.impact.get("impacted_total", kept) - kept)
    if p.impact.get("dependents"):
        used = p.impact["dependents"]
        blocks += _part(f"*Used by {len(used)} subject{'s' if len(used) != 1 else ''}* — each classified with this version in, in its own mode",
                        [_dependent_line(d, view.subject.name) for d in used]
                        + [f"_They stay on the version of {escape(view.subject.name)} they pin until their own proposals move them "
                           "(a reference pins a version)._"])
    if p.impact.get("unowned"):
        blocks += _part("*Readers nobody owns* — no catalog team can be asked for them",
                        [f"• `{escape(j['name'])}` ({escape(j['namespace'])}) · learned from {escape(j.get('learned', 'catalog'))}"
                         + (f" · named owner{'s' if len(j['owners']) > 1 else ''} not in the catalog: {escape(', '.join(j['owners']))}" if j["owners"] else "")
                         for j in p.impact["unowned"]])
    if p.impact.get("consumer_groups"):
        blocks += readers_part(view.id, p.impact["consumer_groups"], not (p.backward and p.forward),
                               pending=view.state is State.PENDING and team is None)
    if p.teams:
        blocks += _part("*Teams asked*", [_team_line(view, t) for t in p.teams])
    if p.notes:
        blocks.append(section(f"*Notes for consumers*\n{escape(p.notes)}"))
    if view.state is State.PENDING:
        blocks.append(_buttons(view.id, team, bool(p.held), bool(p.emergency), offer=level == "breaking"))
    elif view.state in (State.REJECTED, State.CHANGES_REQUESTED) and team is None:
        blocks.append({"type": "actions", "block_id": f"proposal-{view.id}", "elements": [
            {"type": "button", "action_id": ids.REVISE, "style": "primary", "text": {"type": "plain_text", "text": "Revise"}, "value": str(view.id)}]})
    blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": f"ChangeOps · proposal #{view.id} · `/schema status {view.id}`"}]})
    return Reply(f"{escape(title)}: {STATE_TEXT[view.state]}", blocks)


def registry_line(view: ProposalView) -> list[str]:
    """Where the registration of the approved version stands, as its own line."""
    p = view.proposal
    if p.registry_id is not None:
        lifted = f" (its {p.mode} check lifted for this acknowledged break, then set again)" if Mode.parse(p.mode).fails(p.backward, p.forward) else ""
        return ["Registered in the Schema Registry as " + (f"version {p.registry_version} (id {p.registry_id})" if p.registry_version
                                                           else f"schema id {p.registry_id}") + lifted]
    if p.registry_state == "registering":
        return [f":hourglass_flowing_sand: Registering version {p.version} in the Schema Registry…"]
    if p.registry_state == "retrying":
        return [f":hourglass_flowing_sand: Registering version {p.version} in the Schema Registry — retrying since "
                f"{_when(p.registry_since)} ({escape((p.registry_error or '')[:200])})"]
    if p.registry_error:
        return [f":warning: Not registered in the Schema Registry after {p.registry_attempts} attempt{'s' if p.registry_attempts != 1 else ''}: "
                f"{escape(p.registry_error[:300])} (the subject's oncall can retry)"]
    return []


def readers_part(proposal_id: int, census: dict[str, Any], breaks: bool, pending: bool) -> list[dict[str, Any]]:
    """"Kafka says N groups read `orders`": the declared readers, the undeclared ones (each with a menu to attribute it to a
    team or mark it retired while the proposal waits), the stale ones; the census's age or failure."""
    groups = census.get("readers", census.get("groups", []))  # "groups": proposals stored before the census said how fresh it is
    reading = [g for g in groups if _activity(g) in ("active", "idle")]
    undeclared = [g for g in reading if not g.get("team") and not g.get("declared_by")]
    taken = census.get("taken_at")
    age = f"census of {_when(datetime.fromisoformat(taken))}" if taken else "no census has answered yet"
    notes = census.get("notes")
    if notes is None and census.get("failed"):
        notes = [failed_note(census["failed"], bool(taken))]
    lines = [f"_{age}_" + "".join(f" · :warning: {escape(note[:300])}" for note in notes or [])]
    if breaks and undeclared:
        lines.append(f":rotating_light: This change breaks reads, and {len(undeclared)} group{'s' if len(undeclared) != 1 else ''} nobody "
                     "declared read the topic: find who runs them before approving.")
    for g in reading:
        if g in undeclared:
            continue
        who = f"job `{escape(g['declared_by'])}`" if g.get("declared_by") else "attributed"
        lines.append(f"• `{escape(g['group'])}` — {who}{' (' + escape(g['team']) + ')' if g.get('team') else ''} · {_state(g)}")
    for g in groups:
        if _activity(g) == "stale":
            lines.append(f"• `{escape(g['group'])}` — stale: idle, last commit {_last(g)}, older than the topic keeps data")
        elif _activity(g) == "retired":
            lines.append(f"• `{escape(g['group'])}` — retired")
    blocks = _part(readers_title(len(reading), census.get("topic", "?"), bool(taken)), lines)
    for g in undeclared[:MAX_UNDECLARED]:
        clients = ", ".join(escape(m["client_id"]) for m in g.get("members", [])[:5])
        text = (f":warning: `{escape(g['group'])}` — *not declared* · {_state(g)}" + (f" ({clients})" if clients else "")
                + f" · last commit {_last(g)}" + (f" · lag {g['lag']:,}" if g.get("lag") is not None else ""))
        block = section(text)
        if pending:
            value = f"{proposal_id}|{g['group']}"[:150]
            block["accessory"] = {"type": "overflow", "action_id": ids.READER_MENU, "options": [
                {"text": {"type": "plain_text", "text": "Attribute to a team…"}, "value": f"attribute|{value}"},
                {"text": {"type": "plain_text", "text": "Mark as retired"}, "value": f"retire|{value}"}]}
        blocks.append(block)
    if len(undeclared) > MAX_UNDECLARED:
        blocks.append(section(f"… and {len(undeclared) - MAX_UNDECLARED} more undeclared groups (`/schema consumers` lists them all)"))
    return blocks


def _activity(group: dict[str, Any]) -> str:
    """``active``, ``idle``, ``stale`` or ``retired``, whether or not it is only as last seen."""
    return str(group["state"]).removeprefix("last seen ")


def _state(group: dict[str, Any]) -> str:
    """The state for people: ``active``, or ``last seen active at 09:00`` when the census could not confirm it."""
    if group.get("live", True) or not group.get("seen_at"):
        return str(group["state"])
    return f"{group['state']} at {_when(datetime.fromisoformat(group['seen_at']))}"


def _last(group: dict[str, Any]) -> str:
    return _when(datetime.fromisoformat(group["last_commit"])) if group.get("last_commit") else "unknown"


def _part(title: str, lines: list[str], unlisted: int = 0) -> list[dict[str, Any]]:
    """A titled part of up to ``MAX_ITEMS`` lines; ``unlisted`` more items exist beyond ``lines``."""
    shown = lines[:MAX_ITEMS]
    more = len(lines) - len(shown) + unlisted
    if more > 0:
        shown.append(f"… and {more} more (`bot classify` / `bot impact` list them all)")
    chunks = fold([title, *shown])
    if len(chunks) > MAX_SECTIONS_PER_PART:
        chunks = chunks[:MAX_SECTIONS_PER_PART]
        chunks[-1] = chunks[-1][:2900] + "\n… (more in `/schema status`)"
    return [section(chunk) for chunk in chunks]


def _dependent_line(part: dict[str, Any], shared: str) -> str:
    """One subject that uses the shared type: its verdict with the new version in, its changes, who it asks."""
    level = str(part.get("level", ""))
    line = f"• `{escape(part['subject'])}` — {LEVEL_MARK.get(level, '')} *{escape(level)}* under {escape(part.get('mode', ''))}"
    if part.get("error"):
        line += f": its schema no longer parses with this version in ({escape(str(part['error'])[:200])})"
    elif part.get("changes"):
        shown = ", ".join(f"`{escape(f['path'])}` {escape(f['rule'])}" for f in part.get("findings", [])[:3])
        more = part["changes"] - min(3, len(part.get("findings", [])))
        line += f" ({part['changes']} change{'s' if part['changes'] != 1 else ''}: {shown}{f', … and {more} more' if more > 0 else ''})"
    else:
        line += " (nothing changes for it)"
    if part.get("pinned") is not None:
        line += f" · pins {escape(shared)} version {part['pinned']}"
    if part.get("owners"):
        line += f" · reaches {escape(', '.join(part['owners']))}"
    elif part.get("note"):
        line += f" · _{escape(part['note'])}_"
    return line


def _impact_lines(impact: dict[str, Any]) -> list[str]:
    lines = [f"_{escape(impact['note'])}_"] if impact.get("note") else []
    items = impact.get("impacted", [])
    if not items:
        return lines or ["_nothing downstream_"]
    total = impact.get("impacted_total", len(items))  # a proposal keeps the first fields and the totals
    datasets = impact.get("datasets_total", len({i["dataset"] for i in items}))
    lines.append(f"{total} field(s) in {datasets} dataset(s) through {len(impact.get('jobs', []))} job(s)")
    enclosed = list(impact.get("enclosed", {}).items())  # changed paths the lineage lists only as the struct holding them
    lines += [f"_`{escape(path)}` is not listed for `{escape(impact['dataset'])}`: answered for `{escape(outer)}`, which holds it_"
              for path, outer in enclosed[:ENCLOSED_SHOWN]]
    if len(enclosed) > ENCLOSED_SHOWN:
        lines.append(f"_… and {len(enclosed) - ENCLOSED_SHOWN} more, each answered for the struct that holds it_")
    black = [j["name"] for j in impact.get("jobs", []) if j.get("black_box")]
    if black:
        lines.append(f":warning: black box{'es' if len(black) > 1 else ''} (no field mappings; assumed to read every field): "
                     + ", ".join(f"`{escape(b)}`" for b in black[:10]))
    dropped = impact.get("dropped", [])
    if dropped:
        lines.append(":wastebasket: dropped since, OpenLineage says (their readers are asked still, in case they are made again): "
                     + ", ".join(f"`{escape(d['dataset'])}` ({escape(d['at'][:16].replace('T', ' '))} UTC)" for d in dropped[:10]))
    lines += [f"• `{escape(i['dataset'])}.{escape(i['field'])}` ← {escape(i['path'])}{' _(black box only)_' if i.get('black_box_only') else ''}"
              for i in items]
    return lines


def _team_line(view: ProposalView, team: str) -> str:
    decision = view.decision_of(team)
    if team == UNOWNED:
        fallback = view.proposal.impact.get("fallback") or []
        who = escape(", ".join(fallback)) if fallback else "nobody (no oncall, no governance team, no fallback in the catalog)"
        if decision is None:
            return f"• unowned readers, answered by the fallback approvers ({who}): :hourglass_flowing_sand: waiting"
        if decision.decision == Decision.APPROVE:
            verb = "self-approved" if decision.user == view.proposal.proposer else "acknowledged"
            return f"• unowned readers: :white_check_mark: {verb} by {mention(decision.user)} for the readers nobody owns"
    if decision is None:
        return f"• {escape(team)}: :hourglass_flowing_sand: waiting"
    mark = {Decision.APPROVE: ":white_check_mark: approved", Decision.REJECT: ":x: rejected",
            Decision.REQUEST_CHANGES: ":pencil2: changes requested"}[Decision(decision.decision)]
    if decision.decision == Decision.APPROVE and decision.user == view.proposal.proposer:
        mark = ":white_check_mark: self-approved (the team allows it)"
    reason = f": {escape(decision.reason)}" if decision.reason else ""
    return f"• {escape(team)}: {mark} by {mention(decision.user)}{reason}"


def emergency_lines(view: ProposalView) -> list[str]:
    """Shipping a held change during its freeze: asked (waiting for a second oncall), or done."""
    asked = view.proposal.emergency
    if not asked:
        return []
    if asked.get("confirmed_by"):
        return [f":rotating_light: *Shipped during the freeze {escape(asked.get('freeze') or '')} as an emergency*: asked by "
                f"{mention(asked['requested_by'])} ({escape(asked['reason'][:300])}), confirmed by {mention(asked['confirmed_by'])}; "
                f"booked in the calendar until {_when(datetime.fromisoformat(asked['until']))}"]
    if view.state is not State.PENDING:
        return []
    return [f":rotating_light: *Emergency asked* by {mention(asked['requested_by'])}: {escape(asked['reason'][:300])} — a second person "
            "from oncall must confirm it to ship during the freeze"]


def _buttons(proposal_id: int, team: str | None, held: bool = False, emergency: bool = False, offer: bool = False) -> dict[str, Any]:
    value = f"{proposal_id}:{team}" if team else str(proposal_id)
    elements = [
        {"type": "button", "action_id": ids.APPROVE, "style": "primary", "text": {"type": "plain_text", "text": "Approve"}, "value": value},
        {"type": "button", "action_id": ids.REJECT, "style": "danger", "text": {"type": "plain_text", "text": "Reject"}, "value": value},
        {"type": "button", "action_id": ids.REQUEST_CHANGES, "text": {"type": "plain_text", "text": "Request changes"}, "value": value},
    ]
    if team is None:
        elements.append({"type": "button", "action_id": ids.WITHDRAW, "text": {"type": "plain_text", "text": "Withdraw"}, "value": value})
    if team is None and offer:  # a breaking change can ship in steps instead: both versions readable until every reader moved
        elements.append({"type": "button", "action_id": ids.TRANSITION_OFFER, "value": value,
                         "text": {"type": "plain_text", "text": "Ship it as a transition…"}})
    if team is None and held:
        elements.append({"type": "button", "action_id": ids.RESCHEDULE, "text": {"type": "plain_text", "text": "Move to the next free window"},
                         "value": value})
        if emergency:
            elements.append({"type": "button", "action_id": ids.EMERGENCY_CONFIRM, "style": "danger", "value": value,
                             "text": {"type": "plain_text", "text": "Confirm the emergency"},
                             "confirm": {"title": {"type": "plain_text", "text": "Ship during the freeze?"},
                                         "text": {"type": "mrkdwn", "text": "The change is recorded now and the deploy gate lets it through "
                                                                            "the freeze. You confirm as the second person from oncall."},
                                         "confirm": {"type": "plain_text", "text": "Ship it"}, "deny": {"type": "plain_text", "text": "Cancel"}}})
        else:
            elements.append({"type": "button", "action_id": ids.EMERGENCY, "value": value,
                             "text": {"type": "plain_text", "text": "Ship during the freeze…"}})
    return {"type": "actions", "block_id": f"proposal-{proposal_id}", "elements": elements}


def _when(moment: Any) -> str:
    return moment.strftime("%Y-%m-%d %H:%M UTC") if moment is not None else "?"
