// One CHECKED edge per task a drift check looked at: outcome, reason, tables, old/new answers.
MATCH (c:DriftCheck {key: $check})
UNWIND $rows AS row
MATCH (t:Task {key: row.key})
MERGE (c)-[e:CHECKED]->(t)
SET e += row.props
