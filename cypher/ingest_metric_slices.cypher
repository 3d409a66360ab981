UNWIND $rows AS row
MATCH (m:Metric {key: row.metric}), (d:Dimension {key: row.dimension})
MERGE (m)-[:SLICED_BY]->(d)
