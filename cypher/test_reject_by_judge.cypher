// Test helper: make one task rejected by the validator's judge alone, as a run with a model does.
MATCH (t:Task {key: $key})
SET t.status = 'rejected', t.rejections = [$reason], t.judge = $judge
