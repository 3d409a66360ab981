// The Postgres schema of one domain and the other domains whose data lives in the same schema
// (`dibench domain remove --data` refuses to drop a schema another domain still reads).
MATCH (d:Domain {name: $domain})
RETURN d.schema AS schema,
       COLLECT { MATCH (o:Domain) WHERE o.schema = d.schema AND o.name <> d.name RETURN o.name } AS shared_with
