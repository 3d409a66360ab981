MATCH (run:Run {key: $run})
MATCH (run)-[p:PLANS]->(s:Skeleton {key: $skeleton})
WHERE p.owner = $worker
SET p.state = 'done', p.done_at = $now
WITH run, s
UNWIND $rows AS row
MERGE (t:Task {key: row.key})
SET t += row.props, t.data_fingerprint = run.data_fingerprint
MERGE (t)-[:FROM_SKELETON]->(s)
// A task belongs to one current run: a later run that rewrites its key takes it over (the old
// GENERATED_BY edge goes, the earlier runs stay listed in t.previous_runs), so summaries and
// exports see each task once.
WITH run, t, row
OPTIONAL MATCH (t)-[old:GENERATED_BY]->(prev:Run) WHERE prev <> run
WITH run, t, row, collect(old) AS olds, collect(prev.key) AS prevs
FOREACH (e IN olds | DELETE e)
FOREACH (_ IN CASE WHEN size(prevs) = 0 THEN [] ELSE [1] END |
  SET t.previous_runs = reduce(acc = coalesce(t.previous_runs, []), k IN prevs |
                               CASE WHEN k IN acc THEN acc ELSE acc + k END))
MERGE (t)-[:GENERATED_BY]->(run)
// Rule provenance is rebuilt from the row: a rewrite keeps no edge to a rule (version) the
// task is no longer computed with.
WITH t, row
OPTIONAL MATCH (t)-[u:USES_RULE|USES_RULE_VERSION]->()
DELETE u
WITH DISTINCT t, row
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
