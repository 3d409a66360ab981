UNWIND $rows AS row
MATCH (m:Metric {key: row.metric}), (c:Metric {key: row.component})
MERGE (m)-[:USES]->(c)
