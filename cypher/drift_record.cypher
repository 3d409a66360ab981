// The audit record of one drift check, linked from its domain.
MATCH (d:Domain {name: $domain})
MERGE (c:DriftCheck {key: $key})
ON CREATE SET c += $props
MERGE (d)-[:HAS_DRIFT_CHECK]->(c)
