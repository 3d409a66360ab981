MATCH (t:Task {status: 'admitted'})-[:ON_METRIC]->(m:Metric {id: $metric})
RETURN DISTINCT t.key AS key
