// The catalog's routing tasks still in force (a task whose database left the catalog is retired).
MATCH (t:RoutingTask {catalog: $catalog})
WHERE coalesce(t.status, 'admitted') <> 'retired'
RETURN t.contract AS contract
ORDER BY t.task_id
