MATCH (m:Metric {key: $metric})
MATCH (t:Task)-[:USES_RULE]->(r:Rule)
WHERE r.id IN $rules AND r.domain = m.domain AND t.status = 'admitted' AND t.variant = 'standard'
  AND (t)-[:ON_METRIC]->(m)
RETURN r.id AS rule_id, collect(t.key) AS tasks
