// One graph: a catalog table of a PostgreSQL source that is a dibench domain's schema points to
// that domain's Table node, so questions can cross routing and the artifact linkage graph.
MATCH (l:CatalogLocation {catalog: $catalog, engine: 'postgresql'})-[:CatalogLocates]->(d:CatalogDatabase)
MATCH (dom:Domain {schema: l.db_schema})
MATCH (d)-[:CatalogHasTable]->(ct:CatalogTable)
MATCH (t:Table {key: 'table:' + dom.name + '/' + ct.name})
MERGE (ct)-[:CatalogIsDomainTable]->(t)
RETURN count(*) AS linked
