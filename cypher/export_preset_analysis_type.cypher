MATCH (t:Task {analysis_type: $analysis_type, status: 'admitted'})
RETURN t.key AS key
