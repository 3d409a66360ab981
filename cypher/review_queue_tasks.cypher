// The tasks of a domain as a review queue needs them: key, strata and current version. The
// admitted ones, and with $judge_rejected also those only the validator's judge rejected (every
// rejection of theirs is the judge's), so that people judge both sides of the validator.
MATCH (t:Task {domain: $domain})
WHERE ($variants IS NULL OR t.variant IN $variants)
  AND (t.status = 'admitted'
       OR ($judge_rejected AND t.status = 'rejected' AND size(coalesce(t.rejections, [])) > 0
           AND all(r IN t.rejections WHERE r STARTS WITH 'judge: ')))
RETURN t.key AS key, t.tier AS tier, t.analysis_type AS analysis_type, coalesce(t.version, 1) AS version
ORDER BY t.key
