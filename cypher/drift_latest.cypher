// The newest drift check of a domain with its per-task edges.
MATCH (:Domain {name: $domain})-[:HAS_DRIFT_CHECK]->(c:DriftCheck)
WITH c ORDER BY c.at_ms DESC, c.key DESC LIMIT 1
OPTIONAL MATCH (c)-[e:CHECKED]->(t:Task)
RETURN c {.*} AS check, [x IN collect(e {.*, key: t.key}) WHERE x.key IS NOT NULL] AS tasks
