// Tasks of one domain with one of $statuses (of one run when $run is not null), with the
// rounding of their metric: what evaluation needs to build task records and contracts.
MATCH (t:Task {domain: $domain})
WHERE t.status IN $statuses AND ($run IS NULL OR EXISTS { (t)-[:GENERATED_BY]->(:Run {key: $run}) })
OPTIONAL MATCH (t)-[:ON_METRIC]->(m:Metric)
RETURN t {.*} AS task, m.rounding AS rounding
ORDER BY t.key
