MERGE (r:Run {key: $key})
ON CREATE SET r += $props
