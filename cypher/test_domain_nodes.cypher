// Every node of one domain with all its properties: the test suite's before/after snapshot.
MATCH (n) WHERE n.domain = $domain OR (n:Domain AND n.name = $domain)
RETURN labels(n) AS labels, n.key AS key, properties(n) AS props
ORDER BY key
