CREATE INDEX task_status IF NOT EXISTS FOR (n:Task) ON (n.status)
