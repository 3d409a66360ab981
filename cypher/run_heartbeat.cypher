// The driver of a run says it is alive; no row when another process has taken the run over.
MATCH (r:Run {key: $run})
WHERE r.driver = $driver
SET r.heartbeat_until = $until
RETURN r.key AS key
