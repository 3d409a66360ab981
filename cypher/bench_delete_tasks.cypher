// One batch of the generation bench's reset between configurations: the domain's tasks go (the
// caller loops until none is deleted), its artifact graph and earlier runs stay.
MATCH (t:Task {domain: $domain})
WITH t LIMIT $limit
DETACH DELETE t
