// The domains a report describes when none is named: every domain that has tasks, by name.
MATCH (d:Domain)
WHERE EXISTS { MATCH (:Task {domain: d.name}) }
RETURN d.name AS name ORDER BY name
