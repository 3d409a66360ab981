// The skeletons of a run not yet done (a resumed run refreshes them under the current rules).
MATCH (:Run {key: $run})-[p:PLANS]->(s:Skeleton)
WHERE p.state <> 'done'
RETURN s.key AS key
