MATCH (t:Task)-[:GENERATED_BY]->(:Run {key: $run})
WHERE t.status = 'admitted'
RETURN t {.*} AS task ORDER BY t.key
