UNWIND $rows AS row
MATCH (v:Task {key: row.variant}), (s:Task {key: row.standard})
MERGE (v)-[:VARIANT_OF]->(s)
