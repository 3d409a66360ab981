// How the rules in force of a domain got their effects from an LLM (model, prompt version): the
// Run of a generation or rule update over them records it next to its own prompt versions.
MATCH (r:Rule {domain: $domain})
WHERE r.effects_source = 'llm' AND NOT coalesce(r.removed, false)
RETURN DISTINCT r.effects_model AS model, r.effects_prompt_version AS prompt_version
ORDER BY prompt_version, model
