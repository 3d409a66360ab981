// Standard tasks an update of one rule must re-derive: every task (admitted, or retired by an
// earlier update) on a metric whose policy the update may change. Variants follow their
// standard task. The seed is that of the run the task names (t.run_key): one row per task even
// where an old graph left several GENERATED_BY edges.
MATCH (m:Metric)<-[:ON_METRIC]-(t:Task {variant: 'standard'})
WHERE m.key IN $metrics AND t.status IN ['admitted', 'retired']
MATCH (t)-[:FROM_SKELETON]->(s:Skeleton)
OPTIONAL MATCH (run:Run {key: t.run_key})
RETURN t {.*} AS task, s {.*} AS skeleton, run.seed AS seed, 'policy' AS why
