// On resume: claims of processes that are gone ($dead) or whose lease has expired go back to
// pending, so the new workers take them over at once.
MATCH (:Run {key: $run})-[p:PLANS]->(:Skeleton)
WHERE p.state = 'claimed' AND (p.owner_proc IN $dead OR p.lease_until < $now)
SET p.state = 'pending', p.owner = null, p.owner_proc = null, p.lease_until = null
RETURN count(p) AS released
