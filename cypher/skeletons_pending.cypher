MATCH (:Run {key: $run})-[p:PLANS]->(:Skeleton)
RETURN p.state AS state, count(*) AS count
