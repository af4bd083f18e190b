"""Every place a mapping's fields are at. A field of a type used at several places (an Avro named record, a JSON Schema
definition, a Protobuf message) is renamed at each of them by one edit, and each place may have readers of its own:
``shipping.zip → shipping.postcode`` renames ``billing.zip`` too when both are an ``Address``."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from bot.domain.lineage.field_paths import FieldWalk, Listing
from bot.domain.transitions.model import Rename

PLACES = 200  # the most places listed for one rename from the schema alone (the readers' own places come on top)


def every_place(walk: FieldWalk | None, listing: Listing, mapping: Sequence[Rename], reading: Iterable[str], limit: int = PLACES) -> list[Rename]:
    """``mapping`` (first, as given) and each rename again at every other place of the same field: the places the schema
    lists (``walk.listing()``: the first ``limit`` of them, in its order), and the places on or under the paths jobs read
    (``reading``), however deep."""
    if walk is None:
        return list(mapping)
    order, ends = listing
    listed = sorted(order, key=order.__getitem__)
    reading = list(reading)
    out = dict.fromkeys(mapping)
    for rename in mapping:
        fields = {(met.holder, met.name) for met in walk.along(rename.old) if met.last}
        if not fields:
            continue
        name = next(n for _, n in fields)
        new_name = rename.new[len(rename.old) - len(name):]  # both sides share the path to their record
        places = [p for p in listed if ends[p] & fields][:limit]
        for path in reading:
            for met in walk.along(path):
                if (met.holder, met.name) in fields:
                    places.append(met.place)  # the path reads the field here, or something inside it
                elif met.last and (under := walk.below(met, fields)) is not None:
                    places.append(under)  # the path reads a whole struct that holds the field
        for place in places:
            out.setdefault(Rename(place, place[:len(place) - len(name)] + new_name))
    return list(out)
