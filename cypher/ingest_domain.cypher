MERGE (d:Domain {key: $key})
WITH d WHERE d.hash IS NULL OR d.hash <> $hash
SET d.name = $name, d.description = $description, d.schema = $schema, d.hash = $hash
