MATCH (:Run {key: $run})-[p:PLANS]->(s:Skeleton)
WHERE p.state = 'pending' OR (p.state = 'claimed' AND p.lease_until < $now)
WITH p, s ORDER BY p.order LIMIT $limit
SET p.lock = $token
WITH p, s
WHERE p.state = 'pending' OR (p.state = 'claimed' AND p.lease_until < $now)
SET p.state = 'claimed', p.owner = $worker, p.owner_proc = $proc, p.lease_until = $until, p.claims = coalesce(p.claims, 0) + 1
RETURN s {.*} AS skeleton
