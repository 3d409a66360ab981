MATCH (:Run {key: $run})-[p:PLANS]->(s:Skeleton)
WHERE s.key IN $keys AND p.owner = $worker AND p.state = 'claimed'
SET p.lease_until = $until
