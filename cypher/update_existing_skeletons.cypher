UNWIND $keys AS k
MATCH (s:Skeleton {key: k})
RETURN s.key AS key
