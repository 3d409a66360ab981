UNWIND $rows AS row
MATCH (r:Rule {key: row.rule}), (m:Metric {key: row.metric})
MERGE (r)-[e:MODIFIES]->(m)
WITH e, row WHERE e.hash IS NULL OR e.hash <> row.hash
SET e += row.props, e.hash = row.hash
