// Every relationship leaving a node of one domain, with its properties: the test suite's snapshot.
MATCH (a)-[r]->(b) WHERE a.domain = $domain
RETURN type(r) AS type, a.key AS src, b.key AS dst, properties(r) AS props
ORDER BY type, src, dst
