// Every skeleton a run planned, with its claim state: the worker tests' evidence.
MATCH (:Run {key: $run})-[p:PLANS]->(s:Skeleton)
RETURN s.key AS skeleton, p.state AS state, p.owner AS owner, p.claims AS claims, p.selected_by AS selected_by
ORDER BY skeleton
