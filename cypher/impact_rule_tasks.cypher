// Tasks whose provenance uses one rule, with the rule version each used.
MATCH (:Rule {key: $rule})<-[u:USES_RULE]-(t:Task)
OPTIONAL MATCH (t)-[:ON_DIMENSION]->(d:Dimension)
RETURN t.key AS key, t.analysis_type AS analysis_type, t.tier AS tier, t.variant AS variant, t.status AS status,
       t.metric_id AS metric_id, d.column AS dimension, u.version AS rule_version
ORDER BY key
