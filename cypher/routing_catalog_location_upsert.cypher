// The private mapping from an opaque public id to the physical database. Never returned by
// public tools: only routing_catalog_private_locations reads it (scoring and execution).
UNWIND $rows AS row
MATCH (d:CatalogDatabase {public_id: row.public_id})
MERGE (l:CatalogLocation {public_id: row.public_id})
SET l.catalog = row.catalog, l.name = row.name, l.engine = row.engine, l.location = row.location,
    l.db_schema = row.db_schema
MERGE (l)-[:CatalogLocates]->(d)
