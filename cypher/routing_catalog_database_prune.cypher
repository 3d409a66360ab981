// Re-ingest: remove the catalog's databases of that engine that are gone from their folder or
// warehouse (with their tables, columns and private locations); other engines' sources stay.
MATCH (l:CatalogLocation {catalog: $catalog, engine: $engine})-[:CatalogLocates]->(d:CatalogDatabase)
WHERE NOT d.public_id IN $keep
OPTIONAL MATCH (d)-[:CatalogHasTable]->(t:CatalogTable)
OPTIONAL MATCH (t)-[:CatalogHasColumn]->(c:CatalogColumn)
WITH collect(DISTINCT d) AS ds, collect(DISTINCT l) AS ls, collect(DISTINCT t) AS ts, collect(DISTINCT c) AS cs
FOREACH (n IN cs | DETACH DELETE n)
FOREACH (n IN ts | DETACH DELETE n)
FOREACH (n IN ls | DETACH DELETE n)
FOREACH (n IN ds | DETACH DELETE n)
RETURN size(ds) AS databases
