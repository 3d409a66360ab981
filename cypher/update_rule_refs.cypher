// Current rule -> metric edges on the given metrics of a domain, as skeleton rule references.
MATCH (r:Rule {domain: $domain})-[e:MODIFIES]->(m:Metric {domain: $domain})
WHERE m.id IN $metrics
RETURN r.id AS rule_id, m.id AS metric_id, e.op AS op, e.verified AS verified, r.rule_type AS rule_type,
       r.version AS version, r.content_hash AS hash,
       [(r)-[a:APPLIES_WHEN]->(d:Dimension) | {dimension: d.column, value: a.value}] AS applies
ORDER BY rule_id, metric_id
