// Test tear-down of test_export_extra_run.
MATCH (r:Run {key: $run})
DETACH DELETE r
