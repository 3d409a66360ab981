// One person's review of one version of a task: a Review node per (task version, reviewer),
// saved again in place when the person changes their mind. Written only while the task still
// has the version the page showed: a review of a version an update has replaced is refused
// (no row returned), so a verdict never lands on a gold answer the person did not see.
MATCH (t:Task {key: $task_key})
WHERE coalesce(t.version, 1) = $task_version
MERGE (r:Review {key: $key})
SET r += $props
MERGE (r)-[:REVIEWS]->(t)
RETURN r.key AS key
