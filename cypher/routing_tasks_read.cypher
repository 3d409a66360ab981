MATCH (t:RoutingTask {catalog: $catalog})
RETURN t.contract AS contract
ORDER BY t.task_id
