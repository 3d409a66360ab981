UNWIND $rows AS row
MERGE (m:Metric {key: row.key})
WITH m, row WHERE m.hash IS NULL OR m.hash <> row.hash
SET m += row.props, m.hash = row.hash
