// The rule documents of a domain, their titles and bodies: the page quotes the sentence each
// effect comes from.
MATCH (r:Rule {domain: $domain})
RETURN r.id AS id, r.title AS title, r.body AS body, r.rule_type AS rule_type
ORDER BY r.id
