UNWIND $rows AS row
MATCH (v:Task {key: row.key}), (s:Task {key: row.standard})
MERGE (v)-[:VARIANT_OF]->(s)
