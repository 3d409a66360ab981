// Relationships of one domain's nodes, in batches (the caller loops until none is deleted):
// nodes first would put a dense node's whole relationship set into one transaction.
MATCH (n) WHERE n.domain = $domain OR (n:Domain AND n.name = $domain)
MATCH (n)-[e]-()
WITH DISTINCT e LIMIT $limit
DELETE e
