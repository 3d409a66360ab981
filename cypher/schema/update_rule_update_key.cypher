CREATE CONSTRAINT update_rule_update_key IF NOT EXISTS FOR (n:RuleUpdate) REQUIRE n.key IS UNIQUE
