MATCH (t:Task {tier: $tier, status: 'admitted'})
RETURN t.key AS key
