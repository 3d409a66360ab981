UNWIND $rows AS row
MERGE (r:Rule {key: row.key})
MERGE (v:RuleVersion {key: row.version_key})
  ON CREATE SET v += row.version_props
MERGE (r)-[:HAS_VERSION]->(v)
WITH r, v, row
OPTIONAL MATCH (r)-[old:CURRENT_VERSION]->(prev:RuleVersion) WHERE prev.key <> row.version_key
DELETE old
WITH r, v, row
MERGE (r)-[:CURRENT_VERSION]->(v)
WITH r, row WHERE r.hash IS NULL OR r.hash <> row.hash
SET r += row.props, r.hash = row.hash
