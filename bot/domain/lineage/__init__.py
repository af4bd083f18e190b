"""Field-level lineage: the catalog, OpenLineage events, the graph and the impact query."""
