// The stored state of one rule: current version, rule -> metric edges, applicability, mentions,
// and the update sequence of its domain (optimistic concurrency between plan and write).
MATCH (r:Rule {key: $rule})
OPTIONAL MATCH (r)-[:CURRENT_VERSION]->(v:RuleVersion)
OPTIONAL MATCH (d:Domain {name: r.domain})
RETURN r.id AS id, r.domain AS domain, r.removed AS removed, r.rule_type AS rule_type,
       v.version AS version, v.hash AS hash, v.effects_json AS effects_json,
       coalesce(d.update_seq, 0) AS seq,
       [(r)-[e:MODIFIES]->(m:Metric) | {metric: m.id, op: e.op, verified: e.verified}] AS edges,
       [(r)-[a:APPLIES_WHEN]->(dim:Dimension) | {dimension: dim.column, value: a.value}] AS applies,
       [(r)-[:MENTIONS]->(m:Metric) | m.id] AS mentions
