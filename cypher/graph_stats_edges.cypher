MATCH (a)-[r]->(b) WHERE $domain IS NULL OR (a.domain = $domain AND b.domain = $domain)
RETURN type(r) AS type, count(*) AS count ORDER BY type
