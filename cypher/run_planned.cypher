// The skeletons a run has planned (a resumed run continues with these instead of selecting again).
MATCH (:Run {key: $run})-[p:PLANS]->(s:Skeleton)
RETURN s.key AS key, p.selected_by AS selected_by
ORDER BY p.order, s.key
