// The rules a run was planned under (`run_rules_state`; null: a run that does not record them)
// and its domain's rules now, in the same form.
MATCH (run:Run {key: $run})
OPTIONAL MATCH (r:Rule {domain: run.domain})
WITH run, r ORDER BY r.key
RETURN run.rules_state AS planned,
       collect(r.key + '#' + coalesce(r.content_hash, '') + CASE WHEN r.removed THEN ':removed' ELSE '' END) AS now
