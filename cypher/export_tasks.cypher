// The exported records: each task with its Run, the rule versions it used and the tables it reads.
UNWIND $keys AS k
MATCH (t:Task {key: k})
OPTIONAL MATCH (t)-[:GENERATED_BY]->(run:Run)
RETURN t {.*} AS task, run {.*} AS run,
       [(t)-[:USES_RULE_VERSION]->(v:RuleVersion) | {domain: v.domain, rule_id: v.rule_id, version: v.version,
                                                     hash: v.hash, effective_date: v.effective_date}] AS rule_versions
ORDER BY t.key
