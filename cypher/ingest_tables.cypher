UNWIND $rows AS row
MERGE (t:Table {key: row.key})
WITH t, row WHERE t.hash IS NULL OR t.hash <> row.hash
SET t += row.props, t.hash = row.hash
