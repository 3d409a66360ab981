// A worker gives back the skeletons it claimed and could not write (a store out of reach, the
// rules changed): pending again at once, for the next worker or the resumed run.
MATCH (:Run {key: $run})-[p:PLANS]->(s:Skeleton)
WHERE s.key IN $keys AND p.state = 'claimed' AND p.owner = $worker
SET p.state = 'pending', p.owner = null, p.owner_proc = null, p.lease_until = null
