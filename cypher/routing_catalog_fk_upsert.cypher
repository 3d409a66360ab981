UNWIND $rows AS row
MATCH (a:CatalogColumn {key: row.from_key})
MATCH (b:CatalogColumn {key: row.to_key})
MERGE (a)-[:CatalogReferences]->(b)
