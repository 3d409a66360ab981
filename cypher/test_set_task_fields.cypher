// Test helper: set the gold meaning, the data fingerprint and (unless null) the stored gold answer
// of one task: an older gold for the migration record, a stale fingerprint and a wrong answer so
// that drift re-executes it and records it as drifted.
MATCH (t:Task {key: $key})
SET t.gold_version = $gold_version, t.data_fingerprint = $fingerprint,
    t.gold_answer = coalesce($gold_answer, t.gold_answer)
