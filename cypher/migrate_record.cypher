// The changelog entry of a gold-meaning migration, linked from the domain.
MATCH (d:Domain {name: $domain})
MERGE (m:GoldMigration {key: $key})
ON CREATE SET m += $props
MERGE (d)-[:HAS_MIGRATION]->(m)
