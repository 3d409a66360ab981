// Re-ingest of a folder: remove the catalog's databases of that engine the folder no longer holds
// (with their tables, columns and private locations); other engines' sources stay.
MATCH (l:CatalogLocation {catalog: $catalog, engine: $engine})-[:CatalogLocates]->(d:CatalogDatabase)
WHERE NOT d.public_id IN $keep
OPTIONAL MATCH (d)-[:CatalogHasTable]->(t:CatalogTable)
OPTIONAL MATCH (t)-[:CatalogHasColumn]->(c:CatalogColumn)
DETACH DELETE c, t, l, d
