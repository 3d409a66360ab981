// Remove one catalog (its databases, tables, columns, locations, source, units and tasks).
MATCH (d:CatalogDatabase {catalog: $catalog})
OPTIONAL MATCH (d)-[:CatalogHasTable]->(t:CatalogTable)
OPTIONAL MATCH (t)-[:CatalogHasColumn]->(c:CatalogColumn)
OPTIONAL MATCH (l:CatalogLocation)-[:CatalogLocates]->(d)
DETACH DELETE c, t, l, d
WITH count(*) AS _
OPTIONAL MATCH (s:CatalogSource {catalog: $catalog})
DETACH DELETE s
WITH count(*) AS _
OPTIONAL MATCH (u:RoutingUnit {catalog: $catalog})
DETACH DELETE u
WITH count(*) AS _
OPTIONAL MATCH (k:RoutingTask {catalog: $catalog})
DETACH DELETE k
WITH count(*) AS _
OPTIONAL MATCH (b:RoutingBenchmark {catalog: $catalog})
DETACH DELETE b
