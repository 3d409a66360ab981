// Take (or renew) the write lease of a domain: one ingest or rule update writes a domain at a
// time (stores/lease.py). A lease is its own node, deleted on release. Setting `probe` first
// takes the node's write lock, so the check below reads any lease committed meanwhile.
// Returns the holder after the attempt.
MERGE (l:DomainLease {key: $key})
SET l.probe = $token
REMOVE l.probe
WITH l
FOREACH (_ IN CASE WHEN l.holder IS NULL OR l.holder IN [$token, $stale] OR l.until < $now THEN [1] ELSE [] END |
  SET l.holder = $token, l.until = $until)
RETURN l.holder AS holder, l.until AS until
