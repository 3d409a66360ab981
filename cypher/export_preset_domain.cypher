MATCH (t:Task {domain: $domain, status: 'admitted'})
RETURN t.key AS key
