// Every review of a domain's tasks, with the task's current version and what the validator said:
// the queue (what each person has reviewed of the current versions) and `review stats` read it.
MATCH (r:Review)-[:REVIEWS]->(t:Task {domain: $domain})
RETURN r {.*} AS review, coalesce(t.version, 1) AS current_version, t.judge AS judge, t.status AS status,
       t.tier AS tier, t.analysis_type AS analysis_type
ORDER BY r.key
