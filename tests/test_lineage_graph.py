"""The lineage graph and the impact query: fan-out, diamonds, cycles, nesting, black boxes."""

from __future__ import annotations

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.domain.lineage.graph import LineageError, LineageGraph
from bot.domain.lineage.model import Dataset, DatasetId, FieldRef, Job, JobId

K, L = "kafka://b:9092", "iceberg://lake"


def ds(name: str, fields: list[str], ns: str = L, owner: str = "t") -> Dataset:
    return Dataset(DatasetId(ns, name), "table", [owner], fields)


def job(name: str, owner: str, mappings: list[tuple[str, str]], black: list[str] = (), inputs: list[str] = ()) -> Job:  # type: ignore[assignment]
    pairs = [(ref(a), ref(b)) for a, b in mappings]
    ins = list(dict.fromkeys([s.dataset for s, _ in pairs] + [DatasetId(L, i) for i in inputs]))
    outs = list(dict.fromkeys([t.dataset for _, t in pairs] + [DatasetId(L, o) for o in black]))
    return Job(JobId("flink", name), [owner], None, ins, outs, pairs, [DatasetId(L, o) for o in black])


def ref(text: str) -> FieldRef:
    name, _, path = text.partition(".")
    return FieldRef(DatasetId(L, name), path)


def reached(graph: LineageGraph, dataset: str, fields: list[str] | None) -> set[str]:
    return {f"{i.dataset.name}.{i.field}" for i in graph.impact(DatasetId(L, dataset), fields).impacted}


def test_fan_out_reaches_only_the_changed_fields_consumers() -> None:
    graph = LineageGraph([ds("src", ["a", "b"]), ds("x", ["a"]), ds("y", ["b"]), ds("z", ["ab"])], [
        job("jx", "tx", [("src.a", "x.a")]), job("jy", "ty", [("src.b", "y.b")]), job("jz", "tz", [("src.a", "z.ab"), ("src.b", "z.ab")])])
    assert reached(graph, "src", ["a"]) == {"x.a", "z.ab"}
    impact = graph.impact(DatasetId(L, "src"), ["b"])
    assert {j.id.name for j in impact.jobs} == {"jy", "jz"} and set(impact.owners) == {"ty", "tz", "t"}


def test_diamond_is_reported_once_with_a_shortest_path() -> None:
    graph = LineageGraph([ds("s", ["f"]), ds("l", ["f"]), ds("r", ["f"]), ds("m", ["f"]), ds("deep", ["f"])], [
        job("left", "t", [("s.f", "l.f")]), job("right", "t", [("s.f", "r.f")]),
        job("merge", "t", [("l.f", "m.f"), ("r.f", "m.f")]), job("long", "t", [("m.f", "deep.f")])])
    impact = graph.impact(DatasetId(L, "s"), ["f"])
    [merged] = [i for i in impact.impacted if i.dataset.name == "m"]
    assert merged.path in (("s.f", "left", "l.f", "merge", "m.f"), ("s.f", "right", "r.f", "merge", "m.f"))
    assert [i.dataset.name for i in impact.impacted].count("m") == 1


def test_a_job_writing_back_to_its_input_does_not_loop() -> None:
    graph = LineageGraph([ds("t", ["a", "b"]), ds("out", ["a"])], [
        job("loop", "t", [("t.a", "t.b")]), job("back", "t", [("t.b", "t.a"), ("t.b", "out.a")])])
    assert reached(graph, "t", ["a"]) == {"t.b", "out.a"}


def test_nested_fields_reach_through_members_and_enclosing_structs() -> None:
    graph = LineageGraph([ds("s", ["p", "p.d", "p.d.price", "p.d.color"]), ds("o", ["price", "blob", "color"])], [
        job("j", "t", [("s.p.d.price", "o.price"), ("s.p", "o.blob"), ("s.p.d.color", "o.color")])])
    assert reached(graph, "s", ["p.d.price"]) == {"o.price", "o.blob"}
    assert reached(graph, "s", ["p.d"]) == {"o.price", "o.blob", "o.color"}


def test_black_box_reads_everything_and_is_flagged() -> None:
    graph = LineageGraph([ds("s", ["a", "b"]), ds("exact", ["a"]), ds("cache", [])], [
        job("mapped", "t", [("s.a", "exact.a")]), job("opaque", "g", [], black=["cache"], inputs=["s"])])
    impact = graph.impact(DatasetId(L, "s"), ["b"])
    assert [(i.dataset.name, i.field, i.black_box_only) for i in impact.impacted] == [("cache", "*", True)]
    assert [j.black_box for j in impact.jobs] == [True]
    assert impact.impacted[0].path == ("s.b", "opaque (black box)", "cache.*")
    exact = graph.impact(DatasetId(L, "s"), ["a"])
    assert {(i.dataset.name, i.black_box_only) for i in exact.impacted} == {("exact", False), ("cache", True)}


def test_exact_path_is_preferred_over_a_black_box() -> None:
    graph = LineageGraph([ds("s", ["a"]), ds("mid", ["a"]), ds("end", ["a"])], [
        job("opaque", "t", [], black=["end"], inputs=["s"]), job("one", "t", [("s.a", "mid.a")]), job("two", "t", [("mid.a", "end.a")])])
    [end] = [i for i in graph.impact(DatasetId(L, "s"), ["a"]).impacted if i.dataset.name == "end"]
    assert not end.black_box_only and end.path == ("s.a", "one", "mid.a", "two", "end.a")


def test_whole_dataset_and_unknown_names() -> None:
    graph = LineageGraph([ds("s", ["a", "b"]), ds("o", ["x", "y"]), ds("s", ["a"], ns=K)], [job("j", "t", [("s.a", "o.x"), ("s.b", "o.y")])])
    assert reached(graph, "s", None) == {"o.x", "o.y"}
    with pytest.raises(LineageError, match="no field 'zzz'"):
        graph.impact(DatasetId(L, "s"), ["zzz"])
    with pytest.raises(LineageError, match="unknown dataset or subject 'nope'"):
        graph.find_dataset("nope")
    with pytest.raises(LineageError, match="several namespaces"):
        graph.find_dataset("s")
    assert graph.find_dataset("s", namespace=K) == DatasetId(K, "s")


CHAIN_FIELDS = ["a", "b", "c", "d", "e"]


@st.composite
def random_graphs(draw: st.DrawFn) -> LineageGraph:
    names = [f"d{i}" for i in range(draw(st.integers(2, 7)))]
    jobs = []
    for number in range(draw(st.integers(1, 10))):
        source, target = draw(st.sampled_from(names)), draw(st.sampled_from(names))
        if draw(st.integers(0, 4)) == 0:
            jobs.append(job(f"j{number}", "t", [], black=[target], inputs=[source]))
            continue
        pairs = draw(st.lists(st.tuples(st.sampled_from(CHAIN_FIELDS), st.sampled_from(CHAIN_FIELDS)), min_size=1, max_size=4))
        jobs.append(job(f"j{number}", "t", [(f"{source}.{a}", f"{target}.{b}") for a, b in pairs]))
    return LineageGraph([ds(n, CHAIN_FIELDS) for n in names], jobs)


@settings(max_examples=200, deadline=None)
@given(random_graphs(), st.lists(st.sampled_from(CHAIN_FIELDS), min_size=1, max_size=4, unique=True))
def test_impact_of_a_set_is_the_union_of_the_impacts_of_its_members(graph: LineageGraph, fields: list[str]) -> None:
    source = sorted(graph.datasets, key=lambda d: d.name)[0]
    together = {(i.dataset, i.field) for i in graph.impact(source, fields).impacted}
    apart: set[tuple[DatasetId, str]] = set()
    for field in fields:
        apart |= {(i.dataset, i.field) for i in graph.impact(source, [field]).impacted}
    own = {(source, f) for f in fields}
    assert together == apart - own


NESTED = ["a", "a.b", "a.b.c", "a.c", "ab", "a-b", "a/b", "b", "b.a"]


def ranked_starts(graph: LineageGraph, dataset: DatasetId, wanted: list[str]) -> list[tuple[str, ...]]:
    """The start nodes by their definition, one known field at a time: exact matches, then members, then
    enclosing structs (each in the order the fields became known), the whole dataset last."""
    known = graph._fields[dataset]
    declared = graph.datasets[dataset].fields
    ranked = [(3, known["*"])] if "*" in known else []
    for path in wanted:
        related = []
        for p, node in known.items():
            rank = 0 if p == path else 1 if p.startswith(path + ".") else 2 if path.startswith(p + ".") else None
            if p != "*" and rank is not None:
                related.append((rank, node))
        if declared and not related:
            raise LineageError(path)
        ranked += related
    return list(dict.fromkeys(node for _, node in sorted(ranked, key=lambda r: r[0])))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(NESTED), unique=True), st.lists(st.sampled_from(NESTED), unique=True),
       st.lists(st.sampled_from([*NESTED, "a.x", "zz", "a.b.c.d"]), min_size=1, max_size=4, unique=True))
def test_the_start_of_an_impact_is_found_by_prefix_search_as_by_comparing_every_field(
        declared: list[str], mapped: list[str], wanted: list[str]) -> None:
    """Fields become known by declaration and by mappings of undeclared paths; an index sorted for prefix
    search finds the same starts, in the same order, as comparing every known field. A path known only through
    the struct that holds it is named with the nearest such struct."""
    graph = LineageGraph([ds("src", declared), ds("out", ["x"])], [job("j", "t", [(f"src.{p}", "out.x") for p in mapped])])
    source = DatasetId(L, "src")
    try:
        expected = ranked_starts(graph, source, wanted)
    except LineageError:
        with pytest.raises(LineageError):
            graph.impact(source, wanted)
        return
    starts, enclosed = graph._starts(source, tuple(wanted))
    assert starts == expected
    known = graph._fields[source]
    assert enclosed == {path: max((k for k in known if path.startswith(k + ".")), key=len) for path in wanted
                        if path not in known and not any(k.startswith(path + ".") for k in known)
                        and any(path.startswith(k + ".") for k in known)}


@settings(max_examples=200, deadline=None)
@given(random_graphs(), st.lists(st.sampled_from(CHAIN_FIELDS), min_size=1, max_size=4, unique=True), st.integers(0, 6))
def test_the_first_fields_and_the_total_agree_with_the_whole_list(graph: LineageGraph, fields: list[str], count: int) -> None:
    source = sorted(graph.datasets, key=lambda d: d.name)[0]
    every = graph.impact(source, fields).impacted
    fresh = graph.impact(source, fields)
    assert fresh.first(count) == every[:count]  # explained without building the rest
    assert fresh.total == len(every)
    kept = graph.impact(source, fields).as_json(limit=count)
    assert kept["impacted"] == [i.as_json() for i in every[:count]] and kept["impacted_total"] == len(every)
    assert kept["datasets_total"] == len({i.dataset for i in every})


@settings(max_examples=200, deadline=None)
@given(random_graphs(), st.lists(st.sampled_from(CHAIN_FIELDS), min_size=1, max_size=4, unique=True))
def test_jobs_are_listed_in_the_order_the_walk_met_them(graph: LineageGraph, fields: list[str]) -> None:
    source = sorted(graph.datasets, key=lambda d: d.name)[0]
    impact = graph.impact(source, fields)
    met = [node[1] for node in impact._parents if node[0] != "f"]  # the walk's own order (a port or hub holds its JobId)
    assert [j.id for j in impact.jobs] == list(dict.fromkeys(met))


def test_a_job_declared_again_is_asked_as_it_stands_now_and_a_dataset_met_late_has_no_owner() -> None:
    graph = LineageGraph([ds("src", ["a"]), ds("out", ["a"], owner="lake")], [job("enrich", "old-team", [("src.a", "out.a")])])
    graph.add_job(job("enrich", "new-team", [("src.a", "out.a"), ("src.a", "late.a")]))  # a newer event: other owners, a dataset nobody declared
    impact = graph.impact(DatasetId(L, "src"), ["a"])
    assert impact.owners == ("new-team", "lake")
    assert {d.name for d in impact.datasets} == {"out", "late"} and [j.owners for j in impact.jobs] == [("new-team",)]
    assert [i.path for i in impact.impacted] == [("src.a", "enrich", "out.a"), ("src.a", "enrich", "late.a")]


def test_a_black_box_met_late_by_exact_mappings_but_early_through_another_black_box_explains_by_the_early_way() -> None:
    """``late`` is a black box reading ``mid``: its exact field ``mid.a`` is four steps away, its other fields two (through the
    black box ``early``). What ``late`` writes is explained through ``mid.b``, not after the long exact way to ``mid.a``."""
    graph = LineageGraph([ds("s", ["a"]), ds("x", ["a"]), ds("mid", ["a", "b"]), ds("end", ["a"])], [
        job("one", "t", [("s.a", "x.a")]), job("two", "t", [("x.a", "mid.a")]),
        job("early", "t", [], black=["mid"], inputs=["s"]), job("late", "t", [], black=["end"], inputs=["mid"])])
    paths = {f"{i.dataset.name}.{i.field}": (i.path, i.black_box_only) for i in graph.impact(DatasetId(L, "s"), ["a"]).impacted}
    assert paths["mid.a"] == (("s.a", "one", "x.a", "two", "mid.a"), False)
    assert paths["mid.b"] == (("s.a", "early (black box)", "mid.b"), True)
    assert paths["end.a"] == (("s.a", "early (black box)", "mid.b", "late (black box)", "end.a"), True)


@settings(max_examples=300, deadline=None)
@given(random_graphs(), st.lists(st.sampled_from(CHAIN_FIELDS), min_size=1, max_size=4, unique=True))
def test_each_explanation_is_a_shortest_path_exact_mappings_first_and_black_box_only_when_no_exact_one(
        graph: LineageGraph, fields: list[str]) -> None:
    """Against networkx's own shortest paths: a field reachable by exact mappings (no hub on the way) is explained by a
    shortest such path and not flagged; any other, flagged black box only, by a shortest path that goes on from those
    explanations (networkx on the graph where each exact field is entered only at its exact distance). Explanations
    nest: a field on the way to another is explained by that other's path up to it."""
    source = sorted(graph.datasets, key=lambda d: d.name)[0]
    starts = [graph._fields[source][f] for f in fields]
    exact_graph = graph.graph.subgraph(n for n in graph.graph if n[0] != "b")
    exact = nx.multi_source_dijkstra_path_length(exact_graph, starts)
    onward = nx.DiGraph(graph.graph)
    onward.remove_edges_from([(u, v) for u, v in graph.graph.edges if v in exact])
    onward.add_weighted_edges_from([("from", node, distance) for node, distance in exact.items()])
    anyhow = nx.single_source_dijkstra_path_length(onward, "from")
    impacted = graph.impact(source, fields).impacted
    paths = {f"{i.dataset.name}.{i.field}": i.path for i in impacted}
    for found in impacted:
        node = graph._fields[found.dataset][found.field]
        assert found.black_box_only == (node not in exact)
        assert len(found.path) == (exact[node] if node in exact else anyhow[node]) + 1, found
        assert all(paths[step] == found.path[:at + 1] for at, step in enumerate(found.path) if at % 2 == 0 and step in paths), found
        assert found.path[0] in {f"{source.name}.{f}" for f in fields} and found.path[-1] == f"{found.dataset.name}.{found.field}"


def test_a_path_below_a_struct_whose_members_are_listed_is_refused_and_one_below_a_bare_struct_is_answered_through_it() -> None:
    """``payload.detail`` lists its members, so ``payload.detail.cost`` is a typo; ``note`` is declared without members,
    so ``note.text`` may be a field, answered for ``note`` and said so. A subject's topic lists every path of its schema;
    a listing cut at ``FIELD_PATHS`` rules nothing out."""
    graph = LineageGraph([ds("orders", ["id", "payload", "payload.detail", "payload.detail.price", "payload.detail.tax", "note"]),
                          ds("out", ["price", "note"])],
                         [job("enrich", "t", [("orders.payload.detail.price", "out.price"), ("orders.note", "out.note")])])
    orders = DatasetId(L, "orders")
    with pytest.raises(LineageError, match=r"orders has no field 'payload\.detail\.cost' \(payload\.detail has price, tax\)"):
        graph.check_fields(orders, ["payload.detail.price", "payload.detail.cost"])
    graph.check_fields(orders, ["payload", "payload.detail.price", "note.text", "id"])
    impact = graph.impact(orders, ["note.text", "payload.detail.price"])
    assert impact.enclosed == {"note.text": "note"}
    assert {i.field for i in impact.impacted} == {"note", "price"}
    assert impact.as_json()["enclosed"] == {"note.text": "note"} and "enclosed" not in graph.impact(orders, ["id"]).as_json()
    topic = LineageGraph([Dataset(DatasetId(K, "orders"), "topic", ["t"], ["id", "price"], "orders-value")], [])
    with pytest.raises(LineageError, match=r"orders has no field 'price\.x' \(price holds no fields\)"):
        topic.check_fields(DatasetId(K, "orders"), ["price.x"])  # a subject's topic lists its schema's every path
    listed = [f"f{i}" for i in range(20_000)] + ["s", "s.a"]
    cut = LineageGraph([ds("wide", listed)], [])
    cut.check_fields(DatasetId(L, "wide"), ["s.b"])  # past the listing's limit: the schema may have it
    assert cut.impact(DatasetId(L, "wide"), ["s.b"]).enclosed == {"s.b": "s"}
