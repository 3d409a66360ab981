// The Postgres schema of a domain (the agent's database).
MATCH (d:Domain {name: $domain})
RETURN d.schema AS schema
