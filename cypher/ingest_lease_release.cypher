MATCH (l:DomainLease {key: $key}) WHERE l.holder = $token
DELETE l
