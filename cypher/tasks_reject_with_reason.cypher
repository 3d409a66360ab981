// Reject admitted tasks, each with its reason: copies of another task (generation/writeback.py)
// and the tasks of a family a shortcut solves (generation/shortcut_gate.py).
UNWIND $rows AS row
MATCH (t:Task {key: row.key})
WHERE t.status = 'admitted'
SET t.status = 'rejected', t.rejections = coalesce(t.rejections, []) + [row.reason]
