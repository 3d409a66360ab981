// Public: every column of the catalog, with its table and foreign-key target.
MATCH (d:CatalogDatabase {catalog: $catalog})-[:CatalogHasTable]->(t:CatalogTable)-[:CatalogHasColumn]->(c:CatalogColumn)
OPTIONAL MATCH (c)-[:CatalogReferences]->(rc:CatalogColumn)<-[:CatalogHasColumn]-(rt:CatalogTable)
RETURN d.public_id AS public_id, t.name AS table, t.entity AS entity, t.n_rows AS n_rows,
       c.name AS column, c.type AS type, c.category AS category, c.pk AS pk, c.samples AS samples,
       c.min AS min, c.max AS max, rt.name AS ref_table, rc.name AS ref_column
ORDER BY public_id, table, column
