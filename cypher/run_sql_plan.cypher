// How a run's analyses got their answers (issue 15): per analysis type, candidates answered from the
// grouped plan, by one statement per answer (with the reasons), or both (JSON).
MATCH (r:Run {key: $key})
SET r.sql_plan = $sql_plan, r.sql_statements = $statements
