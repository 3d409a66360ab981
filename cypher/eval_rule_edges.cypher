// rule -> metric edges of a domain and whether the counterfactual check verified them.
MATCH (r:Rule {domain: $domain})-[e:MODIFIES]->(m:Metric)
RETURN r.id AS rule_id, m.id AS metric_id, e.verified AS verified
ORDER BY rule_id, metric_id
