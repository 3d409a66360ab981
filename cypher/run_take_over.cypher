// Become the driver of a run if its driver is still the one judged gone ($stale, '' for none).
// Setting `probe` first takes the node's write lock, so two processes resuming the same run at
// once cannot both see the stale driver: the second gets no row.
MATCH (r:Run {key: $run})
SET r.probe = $driver
REMOVE r.probe
WITH r
WHERE coalesce(r.driver, '') = $stale
SET r.driver = $driver, r.heartbeat_until = $until, r.resumed = coalesce(r.resumed, 0) + $resumed
RETURN r.key AS key
