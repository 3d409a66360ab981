// Units of the catalog (ok or failed) that the latest unit build did not produce.
MATCH (u:RoutingUnit {catalog: $catalog})
WHERE NOT u.key IN $keep
DETACH DELETE u
