// The catalog tables linked to a dibench domain's Table nodes (one row per link).
MATCH (d:CatalogDatabase {catalog: $catalog})-[:CatalogHasTable]->(ct:CatalogTable)-[:CatalogIsDomainTable]->(t:Table)
MATCH (dom:Domain) WHERE t.key STARTS WITH 'table:' + dom.name + '/'
RETURN d.public_id AS database, ct.name AS table, dom.name AS domain, t.key AS table_key
ORDER BY database, table, domain
