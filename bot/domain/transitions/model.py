"""A transition's terms: the mapping (old -> new), its versions, and what each schema format's editor does."""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

MAX_RENAMES = 50


class TransitionError(ValueError):
    """A transition that cannot be planned; the message is for the person who asked."""


@dataclass(frozen=True)
class Rename:
    """One side of the mapping: a field path of the current version and the path that replaces it (lineage's form:
    ``userid``, ``address.zip``)."""

    old: str
    new: str

    def as_json(self) -> dict[str, str]:
        """``{"old", "new"}``."""
        return {"old": self.old, "new": self.new}

    @property
    def parent(self) -> str:
        """The record both live in (``address`` for ``address.zip``; empty at the top)."""
        return self.old.rpartition(".")[0]


def listed(items: Sequence[str], shown: int = 5) -> str:
    """Renames or paths as a sentence shows them: the first ``shown``, then how many more (a field of a type used at
    many places is renamed at each)."""
    more = len(items) - shown
    return ", ".join(items[:shown]) + (f" and {more} more" if more > 0 else "")


@dataclass(frozen=True)
class Plan:
    """A transition's versions: expand (proposed first) and contract (the target, proposed once nobody reads the old side)."""

    mapping: tuple[Rename, ...]
    expand: str
    contract: str


class Editor(Protocol):
    """How one schema format writes a transition's versions."""

    def renames(self, current: str, target: str, current_paths: Container[str], target_paths: Container[str]) -> list[Rename]:
        """The mapping the target says by itself (Avro: a new field whose alias names a removed one)."""

    def expand(self, current: str, target: str, mapping: Sequence[Rename]) -> str:
        """The target with each old field put back beside its new one."""

    def contract(self, current: str, target: str, mapping: Sequence[Rename]) -> str:
        """The version after the contract: the target (made to read the old data where the format can say so)."""


def read_mapping(raw: Any) -> list[Rename] | None:
    """``[{"old", "new"}]`` as given by a person or a client; TransitionError says what is wrong. None when absent."""
    if raw is None:
        return None
    if not isinstance(raw, list) or not raw:
        raise TransitionError('mapping: a non-empty list of {"old": PATH, "new": PATH}')
    if len(raw) > MAX_RENAMES:
        raise TransitionError(f"mapping: at most {MAX_RENAMES} fields")
    found = []
    for index, item in enumerate(raw):
        if not isinstance(item, Mapping) or not all(isinstance(item.get(k), str) and item[k].strip() for k in ("old", "new")):
            raise TransitionError(f'mapping[{index}]: expected {{"old": PATH, "new": PATH}}, both field paths such as userid')
        found.append(Rename(item["old"].strip(), item["new"].strip()))
    return found


def parse_mapping_text(text: str) -> list[Rename]:
    """``userid=userId,address.zip=address.postcode`` (the slash command's and the CLI's form)."""
    pairs = [p.strip() for p in text.split(",") if p.strip()]
    if not pairs or any(p.count("=") != 1 for p in pairs):
        raise TransitionError("mapping: OLD=NEW pairs separated by commas (userid=userId)")
    return read_mapping([{"old": p.split("=")[0], "new": p.split("=")[1]} for p in pairs]) or []
