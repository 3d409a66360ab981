MATCH (run:Run {key: $run})
UNWIND $rows AS row
MERGE (s:Skeleton {key: row.key})
SET s += row.props
MERGE (run)-[p:PLANS]->(s)
ON CREATE SET p.state = 'pending', p.order = row.order, p.selected_by = row.selected_by, p.quality = row.quality,
              p.cost = coalesce(row.cost, 1)
WITH s, row
MATCH (m:Metric {key: row.metric_key})
MERGE (s)-[:OF_METRIC]->(m)
WITH s, row
OPTIONAL MATCH (d:Dimension {key: row.dimension_key})
FOREACH (_ IN CASE WHEN d IS NULL THEN [] ELSE [1] END | MERGE (s)-[:ON_DIMENSION]->(d))
WITH s, row
UNWIND (CASE WHEN size(row.rule_keys) = 0 THEN [NULL] ELSE row.rule_keys END) AS rk
OPTIONAL MATCH (r:Rule {key: rk})
FOREACH (_ IN CASE WHEN r IS NULL THEN [] ELSE [1] END | MERGE (s)-[:USES_RULE]->(r))
