MATCH (d:CatalogDatabase {catalog: $catalog})
CALL (d) { OPTIONAL MATCH (d)-[:CatalogHasTable]->(t:CatalogTable) RETURN count(t) AS tables }
CALL (d) { OPTIONAL MATCH (d)-[:CatalogHasTable]->(:CatalogTable)-[:CatalogHasColumn]->(c:CatalogColumn) RETURN count(c) AS columns }
CALL (d) { OPTIONAL MATCH (d)-[r:CatalogRelated]->(:CatalogDatabase) RETURN count(r) AS related }
RETURN count(d) AS databases, sum(tables) AS tables, sum(columns) AS columns, sum(related) AS related
