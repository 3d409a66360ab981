// The audit record of an update made by a change of metric definitions (a re-imported catalog):
// its changelog, linked from each changed metric.
MATCH (m:Metric)
WHERE m.key IN $metrics
MERGE (u:RuleUpdate {key: $key})
ON CREATE SET u += $props
MERGE (m)-[:HAS_UPDATE]->(u)
