// Private: the stored profile of every database of the catalog, so relations of a newly ingested
// source are computed against the sources other ingests brought (the catalog is profiled together).
MATCH (d:CatalogDatabase {catalog: $catalog})-[:CatalogHasTable]->(t:CatalogTable)-[:CatalogHasColumn]->(c:CatalogColumn)
RETURN d.public_id AS public_id, d.engine AS engine, t.name AS table, t.entity AS entity, t.n_rows AS n_rows,
       c.name AS column, c.type AS type, c.category AS category, c.pk AS pk, c.nullable AS nullable,
       c.samples AS samples, coalesce(c.overlap, c.samples) AS overlap, c.min AS min, c.max AS max
ORDER BY public_id, table, column
