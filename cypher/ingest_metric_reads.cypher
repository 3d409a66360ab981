UNWIND $rows AS row
MATCH (m:Metric {key: row.metric}), (t:Table {key: row.table})
MERGE (m)-[:READS]->(t)
