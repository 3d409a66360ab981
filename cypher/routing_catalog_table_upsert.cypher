UNWIND $rows AS row
MATCH (d:CatalogDatabase {public_id: row.public_id})
MERGE (t:CatalogTable {key: row.key})
SET t.name = row.name, t.entity = row.entity, t.n_rows = row.n_rows, t.public_id = row.public_id
MERGE (d)-[:CatalogHasTable]->(t)
