MATCH (t:Task {status: 'admitted'})-[:USES_RULE]->(r:Rule {id: $rule})
RETURN DISTINCT t.key AS key
