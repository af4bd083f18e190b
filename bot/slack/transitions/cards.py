"""The transition card: the mapping, the phase and its proposals, the deadline, and every reader of the old fields
with whether it moved and the evidence; buttons while it runs."""

from __future__ import annotations

from typing import Any

from bot.domain.transitions.model import listed
from bot.services.transitions import Phase, TransitionView
from bot.slack import ids
from bot.slack.render import Reply, escape, fold, mention, section

MAX_READERS = 40
PHASE_MARK = {Phase.EXPAND: ":seedling:", Phase.MIGRATE: ":twisted_rightwards_arrows:", Phase.CONTRACT: ":scissors:",
              Phase.DONE: ":white_check_mark:", Phase.ROLLED_BACK: ":leftwards_arrow_with_hook:"}


def transition_card(view: TransitionView) -> Reply:
    """The card for channels (and ``/schema transition ID``)."""
    row, phase = view.row, view.phase
    title = f"Transition #{view.id} · {view.subject.name} · {phase.value.replace('_', ' ').upper()}"
    blocks: list[dict[str, Any]] = [{"type": "header", "text": {"type": "plain_text", "text": title[:150]}}]
    facts = ["Mapping: " + listed([f"`{escape(m.old)}` → `{escape(m.new)}`" for m in view.mapping]),
             f"{PHASE_MARK[phase]} {_phase_line(view)}",
             f"Deadline: {row.deadline:%Y-%m-%d %H:%M} UTC" + (" · :warning: *overdue*" if view.overdue else "") + " (in the change calendar)",
             f"Started by {mention(row.proposer)}"]
    blocks.append(section("\n".join(facts)))
    moved = sum(r.moved for r in view.readers)
    lines = [f"{':white_check_mark:' if r.moved else ':hourglass_flowing_sand:'} {r.ref.kind} `{escape(r.ref.name)}`"
             f" ({escape(r.team) if r.team else 'no team'}) — {escape(r.evidence)}" for r in view.readers[:MAX_READERS]]
    if len(view.readers) > MAX_READERS:
        lines.append(f"… and {len(view.readers) - MAX_READERS} more (`bot transition status {view.id}`)")
    head = f"*Readers of the old fields* ({moved} of {len(view.readers)} moved)" if view.readers else "*Readers of the old fields*: none known"
    blocks += [section(chunk) for chunk in fold([head, *lines])]
    notes = view.notes()
    if notes:
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": escape("; ".join(notes))[:3000]}]})
    if phase.open:
        blocks.append({"type": "actions", "elements": buttons(view)})
    fallback = f"Transition #{view.id} on {view.subject.name}: {phase.value}, {moved} of {len(view.readers)} readers moved"
    return Reply(fallback, blocks)


def buttons(view: TransitionView) -> list[dict[str, Any]]:
    """What can be done now: say a reader moved, extend, contract now, roll back."""
    value = str(view.id)
    found: list[dict[str, Any]] = []
    if view.laggards and view.phase in (Phase.EXPAND, Phase.MIGRATE):
        found.append(_button(ids.TRANSITION_MOVED, "We moved", value, "primary"))
    if view.phase in (Phase.EXPAND, Phase.MIGRATE):
        found.append(_button(ids.TRANSITION_EXTEND, "Extend a week", value))
    if view.phase is Phase.MIGRATE and view.laggards:
        found.append(_button(ids.TRANSITION_CONTRACT, "Contract now (breaks the readers left)", value, "danger",
                             confirm=("Contract now?", "The readers that have not moved will break; their teams are asked to acknowledge it.")))
    found.append(_button(ids.TRANSITION_ROLLBACK, "Roll back", value, confirm=("Roll back?", "The transition ends; once its expand version is "
                                                                                "recorded, the return to the original is proposed.")))
    return found


def _button(action: str, text: str, value: str, style: str | None = None, confirm: tuple[str, str] | None = None) -> dict[str, Any]:
    button: dict[str, Any] = {"type": "button", "action_id": action, "value": value, "text": {"type": "plain_text", "text": text}}
    if style:
        button["style"] = style
    if confirm:
        button["confirm"] = {"title": {"type": "plain_text", "text": confirm[0]}, "text": {"type": "plain_text", "text": confirm[1]},
                             "confirm": {"type": "plain_text", "text": "Yes"}, "deny": {"type": "plain_text", "text": "No"}}
    return button


def _phase_line(view: TransitionView) -> str:
    row = view.row

    def step(number: int | None) -> str:
        p = view.proposal(number)
        if p is None:
            return "not proposed yet"
        registered = f", registered as version {p.registry_version}" if p.registry_state == "registered" and p.registry_version else \
            f", registry: {p.registry_state}" if p.registry_state else ""
        return f"proposal #{p.id} ({p.level}, {p.state.replace('_', ' ')}{registered})"

    if view.phase is Phase.EXPAND:
        return f"*Expand*: {step(row.expand_proposal_id)} adds the new fields beside the old ones"
    if view.phase is Phase.MIGRATE:
        return (f"*Migrate*: both sides are readable ({step(row.expand_proposal_id)}); the contract is proposed once no reader "
                "is left on the old fields")
    if view.phase is Phase.CONTRACT:
        return f"*Contract*: {step(row.contract_proposal_id)} removes the old fields"
    if view.phase is Phase.DONE:
        return f"*Done*: {escape(row.ended or '')} ({step(row.contract_proposal_id)})"
    back = f"; the return is {step(row.return_proposal_id)}" if row.return_proposal_id else ""
    return f"*Ended*: {escape(row.ended or '')}{back}"
