// Edges are created where missing, not MERGEd: see "Concurrent batches" in ingest/pipeline.py.
UNWIND $rows AS row
MATCH (m:Metric {key: row.metric}), (t:Table {key: row.table})
WHERE NOT EXISTS { (m)-[:READS]->(t) }
CREATE (m)-[:READS]->(t)
