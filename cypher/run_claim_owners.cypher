// The processes (host:pid) holding claims on a run's skeletons.
MATCH (:Run {key: $run})-[p:PLANS]->(:Skeleton)
WHERE p.state = 'claimed' AND p.owner_proc IS NOT NULL
RETURN DISTINCT p.owner_proc AS proc
