UNWIND $rows AS row
MATCH (r:Rule {key: row.rule}), (d:Dimension {key: row.dimension})
MERGE (r)-[e:APPLIES_WHEN {value: row.value}]->(d)
