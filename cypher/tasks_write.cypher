MATCH (run:Run {key: $run})
MATCH (run)-[p:PLANS]->(s:Skeleton {key: $skeleton})
WHERE p.owner = $worker
SET p.state = 'done', p.done_at = $now
WITH run, s
UNWIND $rows AS row
MERGE (t:Task {key: row.key})
SET t += row.props, t.data_fingerprint = run.data_fingerprint
MERGE (t)-[:FROM_SKELETON]->(s)
MERGE (t)-[:GENERATED_BY]->(run)
WITH t, row
MATCH (m:Metric {key: row.metric_key})
MERGE (t)-[:ON_METRIC]->(m)
WITH t, row
OPTIONAL MATCH (d:Dimension {key: row.dimension_key})
FOREACH (_ IN CASE WHEN d IS NULL THEN [] ELSE [1] END | MERGE (t)-[:ON_DIMENSION]->(d))
WITH t, row
UNWIND row.tables AS tk
MATCH (tb:Table {key: tk})
MERGE (t)-[:READS]->(tb)
WITH DISTINCT t, row
UNWIND (CASE WHEN size(row.rules) = 0 THEN [NULL] ELSE row.rules END) AS rr
OPTIONAL MATCH (r:Rule {key: rr.key})
OPTIONAL MATCH (v:RuleVersion {key: rr.version_key})
FOREACH (_ IN CASE WHEN r IS NULL THEN [] ELSE [1] END | MERGE (t)-[u:USES_RULE]->(r) SET u.version = rr.version)
FOREACH (_ IN CASE WHEN v IS NULL THEN [] ELSE [1] END | MERGE (t)-[:USES_RULE_VERSION]->(v))
