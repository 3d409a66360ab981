// Routing tasks per behaviour; retired ones (a required database left the catalog) count apart.
MATCH (t:RoutingTask {catalog: $catalog})
RETURN CASE WHEN t.status = 'retired' THEN 'retired' ELSE t.behaviour END AS behaviour, count(*) AS tasks
ORDER BY behaviour
