MATCH (t:RoutingTask {catalog: $catalog})
RETURN t.behaviour AS behaviour, count(*) AS tasks
ORDER BY behaviour
