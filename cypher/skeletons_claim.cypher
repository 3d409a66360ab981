// Claim up to $limit claimable skeletons of a run for $worker. Metric affinity: first the
// skeletons of metrics the worker has already worked on ($metrics: their partials cube is in its
// cache), then those of metrics no other worker holds a live claim on, then the rest; within a
// tier, one metric's skeletons together, in plan order, the metrics with most planned work first
// (the sum of their skeletons' cost, generation.pipeline.metric_costs: the longest work first, so
// a run ends on small metrics, not with one worker on the last large one while the other
// waits). Two workers thus rarely scan one metric.
MATCH (run:Run {key: $run})
OPTIONAL MATCH (run)-[q:PLANS]->(o:Skeleton)
WHERE q.state = 'claimed' AND q.lease_until >= $now AND q.owner <> $worker
WITH run, collect(DISTINCT o.metric) AS busy
MATCH (run)-[p:PLANS]->(s:Skeleton)
WHERE p.state = 'pending' OR (p.state = 'claimed' AND p.lease_until < $now)
WITH run, p, s, CASE WHEN s.metric IN $metrics THEN 0 WHEN s.metric IN busy THEN 2 ELSE 1 END AS tier
WITH p, s, tier, COLLECT { MATCH (run)-[q:PLANS]->(x:Skeleton) WHERE x.metric = s.metric
                           RETURN coalesce(q.cost, 1) } AS costs
WITH p, s, tier, reduce(total = 0, c IN costs | total + c) AS work
WITH p, s ORDER BY tier, work DESC, s.metric, p.order LIMIT $limit
SET p.lock = $token
WITH p, s
WHERE p.state = 'pending' OR (p.state = 'claimed' AND p.lease_until < $now)
SET p.state = 'claimed', p.owner = $worker, p.owner_proc = $proc, p.lease_until = $until, p.claims = coalesce(p.claims, 0) + 1
RETURN s {.*} AS skeleton
