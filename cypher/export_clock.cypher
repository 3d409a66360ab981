// Update sequence of every domain: an export reads it before and after its queries and retries if
// an update committed in between, so one export always sees one state.
MATCH (d:Domain)
RETURN d.name AS domain, d.schema AS schema, coalesce(d.update_seq, 0) AS seq
ORDER BY domain
