// The shortcut audit of a run (generation/shortcut_gate.py): the best no-understanding strategy
// per analysis type x tier x variant beside the oracle (JSON), and the tasks not admitted because
// of it, by family (JSON).
MATCH (r:Run {key: $key})
SET r.shortcut_audit = $audit, r.shortcut_rejected = $rejected
