MATCH (a:CatalogDatabase {catalog: $catalog})-[r:CatalogRelated]->(b:CatalogDatabase)
WHERE NOT a.public_id + '|' + b.public_id IN $keep
DELETE r
