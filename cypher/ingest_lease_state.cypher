// The write lease of one domain, if any (`dibench domain unlock` decides whether it is stale).
MATCH (l:DomainLease {key: $key})
RETURN l.holder AS holder, l.until AS until, l.purpose AS purpose
