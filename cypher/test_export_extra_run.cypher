// Test set-up: link a task to a second Run, as a rerun before runs could be resumed did.
MATCH (t:Task {key: $task})
MERGE (r:Run {key: $run})
SET r.domain = $domain
MERGE (t)-[:GENERATED_BY]->(r)
