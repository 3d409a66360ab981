// "Could be used together": evidence only, never a requirement.
UNWIND $rows AS row
MATCH (a:CatalogDatabase {public_id: row.a})
MATCH (b:CatalogDatabase {public_id: row.b})
MERGE (a)-[r:CatalogRelated]->(b)
SET r.kinds = row.kinds, r.shared_entities = row.shared_entities, r.shared_columns = row.shared_columns,
    r.value_overlaps = row.value_overlaps, r.score = row.score
