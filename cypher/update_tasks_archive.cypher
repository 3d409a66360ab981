// Keep the previous version of each updated task as a TaskVersion linked from the task.
UNWIND $rows AS row
MATCH (t:Task {key: row.key})
WHERE t.version = row.prev_version
MERGE (v:TaskVersion {key: row.version_key})
ON CREATE SET v += properties(t), v.key = row.version_key, v.task_key = row.key, v.superseded_by = row.update
MERGE (t)-[p:PREVIOUS {version: row.prev_version}]->(v)
