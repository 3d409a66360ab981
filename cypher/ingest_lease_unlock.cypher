// Release a domain's lease by force, only if the holder that was judged stale still holds it
// (a writer that took the lease over meanwhile keeps it).
MATCH (l:DomainLease {key: $key}) WHERE l.holder = $holder
DELETE l
