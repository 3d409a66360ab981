// The dimension node is MERGEd (its key is unique); its HAS_DIMENSION edge is created where
// missing: see "Concurrent batches" in ingest/pipeline.py.
UNWIND $rows AS row
MATCH (t:Table {key: row.table})
MERGE (d:Dimension {key: row.key})
WITH t, d, row
OPTIONAL MATCH (t)-[h:HAS_DIMENSION]->(d)
WITH t, d, h, row WHERE h IS NULL OR d.hash IS NULL OR d.hash <> row.hash
SET d += row.props, d.hash = row.hash
FOREACH (_ IN CASE WHEN h IS NULL THEN [1] ELSE [] END |
  CREATE (t)-[:HAS_DIMENSION {type: row.props.type, cardinality: row.props.cardinality}]->(d))
FOREACH (_ IN CASE WHEN h IS NULL THEN [] ELSE [1] END |
  SET h.type = row.props.type, h.cardinality = row.props.cardinality)
