// Private: the physical location of each database. Only execution and scoring call this.
MATCH (l:CatalogLocation)-[:CatalogLocates]->(d:CatalogDatabase {catalog: $catalog})
RETURN d.public_id AS public_id, l.name AS name, l.engine AS engine, l.location AS location,
       l.db_schema AS db_schema
ORDER BY public_id
