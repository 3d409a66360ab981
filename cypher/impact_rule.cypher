// What one rule reaches: its current version, the metrics it modifies (and composites using them),
// the dimension values it is conditioned on.
MATCH (r:Rule {key: $rule})
OPTIONAL MATCH (r)-[:CURRENT_VERSION]->(v:RuleVersion)
RETURN r.id AS rule_id, r.domain AS domain, r.title AS title, r.rule_type AS rule_type, r.removed AS removed,
       v.version AS version, v.hash AS hash,
       [(r)-[e:MODIFIES]->(m:Metric) | {metric: m.id, op: e.op, verified: e.verified,
                                         changed_slices: e.changed_slices}] AS metrics,
       [p = (c:Metric)-[:USES*1..6]->(:Metric)<-[:MODIFIES]-(r) | [n IN nodes(p) WHERE n:Metric | n.id]] AS composites,
       [(r)-[a:APPLIES_WHEN]->(d:Dimension) | {dimension: d.column, value: a.value}] AS applies
