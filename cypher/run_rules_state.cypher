// The rules a run's skeletons were planned under: every rule of its domain with its content hash
// (and whether it was removed), stamped on the Run when it plans or resumes. A worker compares it
// with `run_rules_current` in the transaction that writes a skeleton's tasks.
MATCH (run:Run {key: $run})
OPTIONAL MATCH (r:Rule {domain: run.domain})
WITH run, r ORDER BY r.key
WITH run, collect(r.key + '#' + coalesce(r.content_hash, '') + CASE WHEN r.removed THEN ':removed' ELSE '' END)
     AS now
SET run.rules_state = now
