// Reject admitted tasks that share their question with a task of another answer (core/ambiguity.py),
// each with its reason.
UNWIND $rows AS row
MATCH (t:Task {key: row.key})
WHERE t.status = 'admitted'
SET t.status = 'rejected', t.rejections = coalesce(t.rejections, []) + [row.reason]
