// A routing catalog table that is a table of this domain's schema points to the domain's Table node
// (the same link the catalog ingest makes when it comes second); the number of such links.
MATCH (dom:Domain {name: $domain})
MATCH (l:CatalogLocation {engine: 'postgresql', db_schema: dom.schema})-[:CatalogLocates]->(d:CatalogDatabase)
MATCH (d)-[:CatalogHasTable]->(ct:CatalogTable)
MATCH (t:Table {key: 'table:' + dom.name + '/' + ct.name})
MERGE (ct)-[:CatalogIsDomainTable]->(t)
RETURN count(*) AS linked
