MATCH (m:Metric {domain: $domain})
OPTIONAL MATCH (m)-[:SLICED_BY]->(sd:Dimension)
OPTIONAL MATCH (m)-[:READS]->(:Table)-[:HAS_DIMENSION]->(td:Dimension {type: 'temporal'})
WITH m, [x IN collect(DISTINCT sd) + collect(DISTINCT td) WHERE x IS NOT NULL] AS dims
UNWIND dims AS d
WITH m, collect(DISTINCT d) AS dims
OPTIONAL MATCH (r:Rule)-[e:MODIFIES]->(m) WHERE e.verified = true
OPTIONAL MATCH (r)-[a:APPLIES_WHEN]->(ad:Dimension)
WITH m, dims, collect(DISTINCT CASE WHEN r IS NULL THEN NULL ELSE
       {id: r.id, op: e.op, rule_type: r.rule_type, version: r.version, hash: r.content_hash,
        applies_dimension: ad.column, applies_value: a.value} END) AS rules
MATCH (m)-[:READS]->(t:Table)
WITH m, dims, rules, collect(DISTINCT t.name) AS tables
UNWIND dims AS d
UNWIND ([NULL] + rules) AS rule
RETURN m.id AS metric, d.column AS dimension, d.type AS dimension_type, d.cardinality AS cardinality,
       d.label AS dimension_label, tables, rule
ORDER BY metric, dimension, coalesce(rule.id, '')
