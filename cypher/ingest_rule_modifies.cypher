// One row per rule with its rule -> metric edges: each created where missing, updated where its
// content hash changed, untouched otherwise (see "Concurrent batches" in ingest/pipeline.py).
UNWIND $rows AS row
MATCH (r:Rule {key: row.rule})
UNWIND row.edges AS edge
MATCH (m:Metric {key: edge.metric})
OPTIONAL MATCH (r)-[old:MODIFIES]->(m)
WITH r, m, old, edge WHERE old IS NULL OR old.hash IS NULL OR old.hash <> edge.hash
FOREACH (_ IN CASE WHEN old IS NULL THEN [1] ELSE [] END |
  CREATE (r)-[e:MODIFIES]->(m) SET e += edge.props, e.hash = edge.hash)
FOREACH (_ IN CASE WHEN old IS NULL THEN [] ELSE [1] END |
  SET old += edge.props, old.hash = edge.hash)
