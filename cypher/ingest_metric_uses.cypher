// Edges are created where missing, not MERGEd: see "Concurrent batches" in ingest/pipeline.py.
UNWIND $rows AS row
MATCH (m:Metric {key: row.metric}), (c:Metric {key: row.component})
WHERE NOT EXISTS { (m)-[:USES]->(c) }
CREATE (m)-[:USES]->(c)
