// Edges are created where missing, not MERGEd: see "Concurrent batches" in ingest/pipeline.py.
// `columns`: the table's columns the metric's SQL reads; extraction picks candidate metrics by them
// (cypher/extract_candidates.cypher). Set only when they differ, so a second ingest changes nothing.
UNWIND $rows AS row
MATCH (m:Metric {key: row.metric}), (t:Table {key: row.table})
OPTIONAL MATCH (m)-[r:READS]->(t)
WITH m, t, r, coalesce(row.columns, []) AS columns
FOREACH (_ IN CASE WHEN r IS NULL THEN [1] ELSE [] END |
  CREATE (m)-[:READS {columns: columns}]->(t))
FOREACH (_ IN CASE WHEN r IS NOT NULL AND coalesce(r.columns, []) <> columns THEN [1] ELSE [] END |
  SET r.columns = columns)
