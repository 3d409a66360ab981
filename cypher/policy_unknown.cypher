// Rules in force that state no effects but mention metrics (by name or id): those metrics'
// policies are unknown until the rule's effects are written or extracted.
MATCH (r:Rule {domain: $domain})-[:MENTIONS]->(m:Metric {domain: $domain})
WHERE r.removed IS NULL AND ($metrics IS NULL OR m.id IN $metrics)
RETURN m.id AS metric_id, r.id AS rule_id
ORDER BY metric_id, rule_id
