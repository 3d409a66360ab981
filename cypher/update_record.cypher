// The audit record of one update: its changelog, linked from the rule.
MATCH (r:Rule {key: $rule})
MERGE (u:RuleUpdate {key: $key})
ON CREATE SET u += $props
MERGE (r)-[:HAS_UPDATE]->(u)
