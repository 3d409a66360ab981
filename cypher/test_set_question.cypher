// Test helper: give one task another question (to make two tasks ask the same).
MATCH (t:Task {key: $key})
SET t.question = $question
