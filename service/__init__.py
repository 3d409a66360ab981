"""The knowledge service, above the stages: the use-cases people call (rules-for, impact,
update-rule, remove-rule, drift, export, the report, removing a domain), the Python API and the
HTTP API."""
