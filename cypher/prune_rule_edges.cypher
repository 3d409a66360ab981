UNWIND $rows AS row
MATCH (r:Rule {key: row.rule})
OPTIONAL MATCH (r)-[e:MODIFIES]->(m:Metric) WHERE NOT m.key IN row.metrics
DELETE e
WITH r, row
OPTIONAL MATCH (r)-[a:APPLIES_WHEN]->(d:Dimension) WHERE NOT (d.key + '=' + toString(a.value)) IN row.applies
DELETE a
WITH DISTINCT r, row
OPTIONAL MATCH (r)-[x:MENTIONS]->(m:Metric) WHERE NOT m.key IN row.mentions
DELETE x
