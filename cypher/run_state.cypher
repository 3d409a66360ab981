// One Run as `dibench generate --resume` needs it.
MATCH (r:Run {key: $run})
RETURN r.key AS key, r.domain AS domain, r.seed AS seed, r.target AS target, r.driver AS driver,
       r.heartbeat_until AS heartbeat_until, r.finished_at AS finished_at, r.update_of AS update_of
