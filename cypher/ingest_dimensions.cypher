UNWIND $rows AS row
MATCH (t:Table {key: row.table})
MERGE (d:Dimension {key: row.key})
MERGE (t)-[h:HAS_DIMENSION]->(d)
WITH d, h, row WHERE d.hash IS NULL OR d.hash <> row.hash
SET d += row.props, d.hash = row.hash, h.type = row.props.type, h.cardinality = row.props.cardinality
