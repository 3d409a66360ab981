// One batch of a domain's deletion (the caller loops until nothing is deleted): a large
// domain deleted in one transaction would need its whole footprint in heap at once.
MATCH (n) WHERE n.domain = $domain OR (n:Domain AND n.name = $domain)
WITH n LIMIT $limit
DETACH DELETE n
