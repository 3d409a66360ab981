// Edges are created where missing, not MERGEd: see "Concurrent batches" in ingest/pipeline.py.
UNWIND $rows AS row
MATCH (m:Metric {key: row.metric}), (d:Dimension {key: row.dimension})
WHERE NOT EXISTS { (m)-[:SLICED_BY]->(d) }
CREATE (m)-[:SLICED_BY]->(d)
