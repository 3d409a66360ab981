// New content of tasks re-checked by a drift --apply: new answers and version for drifted
// tasks (their previous version was archived first), the current data fingerprint for all.
// Only the version the check read is changed.
UNWIND $rows AS row
MATCH (t:Task {key: row.key})
WHERE coalesce(t.version, 1) = row.version
SET t += row.props
