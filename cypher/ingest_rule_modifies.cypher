// Created where missing, updated where its content hash changed, untouched otherwise: see
// "Concurrent batches" in ingest/pipeline.py.
UNWIND $rows AS row
MATCH (r:Rule {key: row.rule}), (m:Metric {key: row.metric})
OPTIONAL MATCH (r)-[old:MODIFIES]->(m)
WITH r, m, old, row WHERE old IS NULL OR old.hash IS NULL OR old.hash <> row.hash
FOREACH (_ IN CASE WHEN old IS NULL THEN [1] ELSE [] END |
  CREATE (r)-[e:MODIFIES]->(m) SET e += row.props, e.hash = row.hash)
FOREACH (_ IN CASE WHEN old IS NULL THEN [] ELSE [1] END |
  SET old += row.props, old.hash = row.hash)
