// Remove tables and columns a database no longer has (re-ingest after a schema change).
UNWIND $rows AS row
MATCH (d:CatalogDatabase {public_id: row.public_id})-[:CatalogHasTable]->(t:CatalogTable)
OPTIONAL MATCH (t)-[:CatalogHasColumn]->(c:CatalogColumn)
WITH row, t, c
WHERE NOT t.key IN row.table_keys OR (c IS NOT NULL AND NOT c.key IN row.column_keys)
FOREACH (_ IN CASE WHEN c IS NOT NULL AND NOT c.key IN row.column_keys THEN [1] ELSE [] END | DETACH DELETE c)
FOREACH (_ IN CASE WHEN NOT t.key IN row.table_keys THEN [1] ELSE [] END | DETACH DELETE t)
