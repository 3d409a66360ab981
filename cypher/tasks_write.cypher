// One skeleton's tasks, written by the worker that holds its claim, with its completion.
// Edges to the nodes that many write-backs share (Run, Metric, Dimension, Table, Rule,
// RuleVersion) are CREATEd where missing, never MERGEd: MERGE locks both end nodes as it goes,
// so two concurrent write-backs whose rows name shared nodes in a different order deadlock
// (Neo4j aborts one and the driver retries it); CREATE takes its locks at commit, in a fixed
// order (see "Concurrent batches" in ingest/pipeline.py). Only the claim holder writes a task's
// edges, so checking for the edge first cannot race with another writer of the same edge.
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
FOREACH (_ IN CASE WHEN EXISTS { (t)-[:GENERATED_BY]->(run) } THEN [] ELSE [1] END |
  CREATE (t)-[:GENERATED_BY]->(run))
// Rule provenance is rebuilt from the row: a rewrite keeps no edge to a rule (version) the
// task is no longer computed with.
WITH t, row
OPTIONAL MATCH (t)-[u:USES_RULE|USES_RULE_VERSION]->()
DELETE u
WITH DISTINCT t, row
MATCH (m:Metric {key: row.metric_key})
FOREACH (_ IN CASE WHEN EXISTS { (t)-[:ON_METRIC]->(m) } THEN [] ELSE [1] END | CREATE (t)-[:ON_METRIC]->(m))
WITH t, row
OPTIONAL MATCH (d:Dimension {key: row.dimension_key})
FOREACH (_ IN CASE WHEN d IS NULL OR EXISTS { (t)-[:ON_DIMENSION]->(d) } THEN [] ELSE [1] END |
  CREATE (t)-[:ON_DIMENSION]->(d))
WITH t, row
UNWIND row.tables AS tk
MATCH (tb:Table {key: tk})
FOREACH (_ IN CASE WHEN EXISTS { (t)-[:READS]->(tb) } THEN [] ELSE [1] END | CREATE (t)-[:READS]->(tb))
WITH DISTINCT t, row
UNWIND (CASE WHEN size(row.rules) = 0 THEN [NULL] ELSE row.rules END) AS rr
OPTIONAL MATCH (r:Rule {key: rr.key})
OPTIONAL MATCH (v:RuleVersion {key: rr.version_key})
FOREACH (_ IN CASE WHEN r IS NULL THEN [] ELSE [1] END | CREATE (t)-[:USES_RULE {version: rr.version}]->(r))
FOREACH (_ IN CASE WHEN v IS NULL THEN [] ELSE [1] END | CREATE (t)-[:USES_RULE_VERSION]->(v))
