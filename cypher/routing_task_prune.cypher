// Drop contracts of the catalog that the latest generation did not produce.
MATCH (t:RoutingTask {catalog: $catalog})
WHERE NOT t.key IN $keep
DETACH DELETE t
