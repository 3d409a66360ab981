MATCH (t:Task {status: $status})
RETURN t.key AS key
