// Standard tasks an update of one rule must re-derive: those whose provenance uses the rule
// (admitted, or retired by an earlier update), and admitted non-knowledge tasks on metrics the
// rule now newly modifies. Variants follow their standard task. The seed is that of the run
// the task names (t.run_key): one row per task even where an old graph left several
// GENERATED_BY edges.
MATCH (:Rule {key: $rule})<-[:USES_RULE]-(t:Task {variant: 'standard'})
WHERE t.status IN ['admitted', 'retired']
MATCH (t)-[:FROM_SKELETON]->(s:Skeleton)
OPTIONAL MATCH (run:Run {key: t.run_key})
RETURN t {.*} AS task, s {.*} AS skeleton, run.seed AS seed, 'uses_rule' AS why
UNION
MATCH (m:Metric)<-[:ON_METRIC]-(t:Task {variant: 'standard', status: 'admitted'})
WHERE m.key IN $metrics AND t.tier <> 'K' AND NOT (t)-[:USES_RULE]->(:Rule {key: $rule})
MATCH (t)-[:FROM_SKELETON]->(s:Skeleton)
OPTIONAL MATCH (run:Run {key: t.run_key})
RETURN t {.*} AS task, s {.*} AS skeleton, run.seed AS seed, 'new_metric' AS why
