// A rule document without effects names these metrics: their policy is unknown until it states
// its effects. Edges are created where missing (see "Concurrent batches" in ingest/pipeline.py).
UNWIND $rows AS row
MATCH (r:Rule {key: row.rule}), (m:Metric {key: row.metric})
WHERE NOT EXISTS { (r)-[:MENTIONS]->(m) }
CREATE (r)-[:MENTIONS]->(m)
