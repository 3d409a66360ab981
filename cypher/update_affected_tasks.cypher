// Standard tasks an update of one rule must re-derive: every task (admitted, or retired by an
// earlier update) on a metric whose policy the update may change. Variants follow their
// standard task.
MATCH (m:Metric)<-[:ON_METRIC]-(t:Task {variant: 'standard'})
WHERE m.key IN $metrics AND t.status IN ['admitted', 'retired']
MATCH (t)-[:FROM_SKELETON]->(s:Skeleton)
OPTIONAL MATCH (t)-[:GENERATED_BY]->(run:Run)
RETURN t {.*} AS task, s {.*} AS skeleton, run.seed AS seed, 'policy' AS why
