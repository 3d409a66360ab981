// Tasks a rule affects: every task on a metric whose policy holds the rule (its gold is computed
// under that policy), with whether the rule is decisive for it (USES_RULE) or featured by it.
MATCH (r:Rule {key: $rule})
OPTIONAL MATCH (r)-[:MODIFIES]->(m:Metric)<-[:ON_METRIC]-(t1:Task)
OPTIONAL MATCH (r)<-[:USES_RULE]-(t2:Task)
WITH r, [x IN collect(DISTINCT t1) + collect(DISTINCT t2) WHERE x IS NOT NULL] AS tasks
UNWIND tasks AS t
WITH DISTINCT r, t
OPTIONAL MATCH (t)-[u:USES_RULE]->(r)
OPTIONAL MATCH (t)-[:ON_DIMENSION]->(d:Dimension)
RETURN t.key AS key, t.analysis_type AS analysis_type, t.tier AS tier, t.variant AS variant, t.status AS status,
       t.metric_id AS metric_id, d.column AS dimension, u.version AS rule_version, u IS NOT NULL AS decisive,
       coalesce(t.featured_rule = r.id, false) AS featured
ORDER BY key
