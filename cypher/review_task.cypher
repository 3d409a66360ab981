// The evidence of one task's review page: the task whole (private: the review app's audience is
// private), its metric's rounding, the run that made it and the rule versions it was computed with.
MATCH (t:Task {key: $key})
OPTIONAL MATCH (t)-[:ON_METRIC]->(m:Metric)
OPTIONAL MATCH (t)-[:GENERATED_BY]->(run:Run)
OPTIONAL MATCH (t)-[:USES_RULE_VERSION]->(v:RuleVersion)
RETURN t {.*} AS task, m.rounding AS rounding, m.name AS metric_name,
       run {.key, .seed, .code_version, .gold_version, .started_at, .phraser, .judge, .llm_model} AS run,
       [x IN collect(DISTINCT v {.rule_id, .version, .hash, .effective_date}) WHERE x.rule_id IS NOT NULL] AS rule_versions
