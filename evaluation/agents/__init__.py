"""Agents under evaluation: reference agents that need no LLM (`reference`) and any langchain-core
chat model with tool calling (`llm`). Every agent acts through a `tools.Toolbox`, which runs SQL
on the read-only path, searches the knowledge base and records each call for the trace."""
