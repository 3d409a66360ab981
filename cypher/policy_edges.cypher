// Candidate policy of metrics of a domain: every verified rule -> metric edge that is current
// (a removed rule has no MODIFIES edge left), with what skeletons and tasks record of the rule.
// $metrics = null reads every metric of the domain.
MATCH (r:Rule {domain: $domain})-[e:MODIFIES]->(m:Metric {domain: $domain})
WHERE e.verified = true AND ($metrics IS NULL OR m.id IN $metrics)
RETURN m.id AS metric_id, r.id AS rule_id, e.op AS op, r.rule_type AS rule_type, r.version AS version,
       r.content_hash AS hash, r.supersedes AS supersedes,
       [(r)-[a:APPLIES_WHEN]->(d:Dimension) | {dimension: d.column, value: a.value}] AS applies
ORDER BY metric_id, rule_id
