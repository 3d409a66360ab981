// What a metric's policy reads of each rule of a domain, compared before and after an ingest:
// its current version's hash, whether it is marked removed, its edges to metrics and dimensions,
// and whether the domain has tasks at all (without tasks, nothing needs re-deriving).
MATCH (r:Rule {domain: $domain})
OPTIONAL MATCH (r)-[:CURRENT_VERSION]->(v:RuleVersion)
RETURN r.id AS id, v.hash AS hash, coalesce(r.removed, false) AS removed,
       [(r)-[e:MODIFIES]->(m:Metric) | m.id + ' ' + coalesce(e.op, '') + ' ' + toString(coalesce(e.verified, false))]
         AS modifies,
       [(r)-[a:APPLIES_WHEN]->(dim:Dimension) | dim.column + '=' + toString(a.value)] AS applies,
       EXISTS { MATCH (:Task {domain: $domain}) } AS has_tasks
