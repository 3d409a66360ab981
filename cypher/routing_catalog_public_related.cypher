// Public: cross-database relations ("could be used together").
MATCH (a:CatalogDatabase {catalog: $catalog})-[r:CatalogRelated]->(b:CatalogDatabase)
RETURN a.public_id AS a, b.public_id AS b, r.kinds AS kinds, r.shared_entities AS shared_entities,
       r.shared_columns AS shared_columns, r.value_overlaps AS value_overlaps, r.score AS score
ORDER BY a, b
