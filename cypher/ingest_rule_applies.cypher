// Edges are created where missing, not MERGEd: see "Concurrent batches" in ingest/pipeline.py.
UNWIND $rows AS row
MATCH (r:Rule {key: row.rule}), (d:Dimension {key: row.dimension})
WHERE NOT EXISTS { (r)-[:APPLIES_WHEN {value: row.value}]->(d) }
CREATE (r)-[:APPLIES_WHEN {value: row.value}]->(d)
