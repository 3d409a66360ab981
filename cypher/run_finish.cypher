// A run whose plan is done and whose augmentation has ended: never resumed again.
MATCH (r:Run {key: $run})
WHERE r.driver = $driver
SET r.finished_at = $at, r.driver = null, r.heartbeat_until = null
RETURN r.key AS key
