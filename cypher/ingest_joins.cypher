// Edges are created where missing, not MERGEd: see "Concurrent batches" in ingest/pipeline.py.
UNWIND $rows AS row
MATCH (a:Table {key: row.src}), (b:Table {key: row.dst})
WHERE NOT EXISTS { (a)-[:JOINS {columns: row.columns}]->(b) }
CREATE (a)-[:JOINS {columns: row.columns}]->(b)
