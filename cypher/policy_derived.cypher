// Derived metrics of a domain and their inputs: their policy is their inputs' policies.
MATCH (m:Metric {domain: $domain})-[:USES]->(c:Metric)
WHERE m.derived = true
RETURN m.id AS metric_id, collect(c.id) AS inputs
ORDER BY metric_id
