// What a generation run's workers did: how many, SQL statements and seconds, how the analyses got
// their answers (per analysis type, candidates answered from the grouped plan, by one statement
// per answer with the reasons, or both; JSON), and the graph transactions the driver had to run
// again (by Neo4j error code, JSON; deadlocks apart).
MATCH (r:Run {key: $key})
SET r.workers = $workers, r.sql_statements = $statements, r.sql_seconds = $sql_seconds,
    r.sql_plan = $sql_plan, r.write_retries = $retries, r.deadlocks = $deadlocks
