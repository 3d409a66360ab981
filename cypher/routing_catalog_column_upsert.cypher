// `overlap` (distinct text values, for relations across sources) is private: public reads never return it.
UNWIND $rows AS row
MATCH (t:CatalogTable {key: row.table_key})
MERGE (c:CatalogColumn {key: row.key})
SET c.name = row.name, c.type = row.type, c.category = row.category, c.pk = row.pk,
    c.nullable = row.nullable, c.samples = row.samples, c.min = row.min, c.max = row.max,
    c.public_id = row.public_id, c.overlap = row.overlap
MERGE (t)-[:CatalogHasColumn]->(c)
