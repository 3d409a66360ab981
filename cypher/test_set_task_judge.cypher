// Test helper: give one task a stage-2 judge record (the validator's verdicts), as a run with a
// model stores it.
MATCH (t:Task {key: $key})
SET t.judge = $judge
