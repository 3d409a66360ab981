CREATE INDEX skeleton_claim IF NOT EXISTS FOR (n:Skeleton) ON (n.run_key, n.state)
