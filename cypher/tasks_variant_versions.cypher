// The invariant every task write checks before it commits: an admitted variant carries the rule
// versions of its standard task, which is admitted too. Returns the variants that break it.
UNWIND $keys AS k
MATCH (v:Task {status: 'admitted'})-[:VARIANT_OF]->(s:Task {key: k})
WHERE s.status <> 'admitted' OR coalesce(v.rule_versions, []) <> coalesce(s.rule_versions, [])
RETURN v.key AS variant, s.key AS standard
