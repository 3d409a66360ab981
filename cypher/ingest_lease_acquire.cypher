// Take (or renew) the write lease of a domain: one ingest, rule update or generation run writes
// a domain at a time (stores/lease.py); `purpose` says which, for the message of a refused writer. A lease is its own node, deleted on release. Setting `probe` first
// takes the node's write lock, so the check below reads any lease committed meanwhile.
// Returns the holder after the attempt.
MERGE (l:DomainLease {key: $key})
SET l.probe = $token
REMOVE l.probe
WITH l
FOREACH (_ IN CASE WHEN l.holder IS NULL OR l.holder IN [$token, $stale] OR l.until < $now THEN [1] ELSE [] END |
  SET l.holder = $token, l.until = $until, l.purpose = $purpose)
RETURN l.holder AS holder, l.until AS until, l.purpose AS purpose
