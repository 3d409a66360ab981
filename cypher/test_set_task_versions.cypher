// Test helper: set the rule versions a task carries (to make a variant disagree with its twin).
MATCH (t:Task {key: $key})
SET t.rule_versions = $versions
