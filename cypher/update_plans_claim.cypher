// Skeletons planned by an update's own Run are owned by the update (tasks_write checks the owner).
MATCH (:Run {key: $run})-[p:PLANS]->(s:Skeleton)
WHERE s.key IN $keys
SET p.state = 'claimed', p.owner = $worker
