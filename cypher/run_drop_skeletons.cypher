// Planned skeletons a resumed run no longer generates (their featured rule no longer modifies the
// metric, or the metric's policy became incomplete): done without tasks, with the reason.
MATCH (:Run {key: $run})-[p:PLANS]->(s:Skeleton)
WHERE s.key IN $keys AND p.state <> 'done'
SET p.state = 'done', p.dropped = $reason, p.owner = null, p.lease_until = null
