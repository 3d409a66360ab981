"""Settings from environment variables (prefix DIBENCH_) or an optional TOML config file.

Defaults point at the local services that `dibench services up` starts. No password has a
default: unset, each is the install's own secret (core.secrets, generated on first use and kept
in the state folder), and an explicit variable always wins.
"""
from __future__ import annotations

import os
import tomllib
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote, urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from dibench.core import secrets

REPO_ROOT = Path(__file__).resolve().parent.parent
# The admin role of the local cluster (initdb -U), the one the default warehouse URL logs in as.
LOCAL_ADMIN = "dibench"


class _TomlSource(PydanticBaseSettingsSource):
    """Reads `[dibench]` keys from the file named by DIBENCH_CONFIG (or ./dibench.toml)."""

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:  # pragma: no cover
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        path = Path(os.environ.get("DIBENCH_CONFIG", "dibench.toml"))
        if not path.is_file():
            return {}
        with path.open("rb") as fh:
            data = tomllib.load(fh)
        section = data.get("dibench", data)
        return {k: v for k, v in section.items() if k in Settings.model_fields}


class Reviewer(BaseModel):
    """A person of the review app (`dibench review serve`), known by the token they log in with.
    `reviewer`: judges tasks (sees gold and SQL, saves reviews); `reader`: sees the queues, the
    statistics and the public part of task pages, and saves nothing; `baseline`: answers tasks in
    the blind mode only (sees what an agent sees)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str = Field(min_length=1, max_length=80, pattern=r"^[A-Za-z0-9_.@\-]+$")
    token: str = Field(min_length=16, max_length=200, repr=False)
    role: Literal["reviewer", "reader", "baseline"] = "reviewer"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="DIBENCH_", extra="ignore")

    state_dir: Path = Field(REPO_ROOT / ".dibench", description="local service state (git-ignored)")
    neo4j_uri: str = Field("bolt://127.0.0.1:7687", description="Bolt URI of Neo4j")
    neo4j_user: str = "neo4j"
    neo4j_password: str = Field(
        "", description="Neo4j password; unset: the install's own (generated, <state_dir>/secrets), which the "
                          "local server gets at its first start")
    neo4j_database: str = "neo4j"
    neo4j_bolt_port: int = 7687
    neo4j_heap: str = Field("2g", description="Neo4j heap size (initial = max)")
    neo4j_pagecache: str = Field("2g", description="Neo4j page cache size")
    database_url: str = Field(
        "postgresql+psycopg://dibench@127.0.0.1:55432/dibench",
        description="SQLAlchemy URL of the warehouse; a URL of the local cluster (loopback, DIBENCH_PG_PORT, user "
                    "dibench) without a password gets the install's own")
    pg_port: int = Field(55432, description="port of the local PostgreSQL cluster")
    statement_timeout_s: float = Field(30.0, description="timeout of generated SQL, seconds")
    sql_parallel_workers: int | None = Field(
        None, ge=0, description="PostgreSQL parallel workers per generated statement during generation "
                                "(max_parallel_workers_per_gather); unset: the CPUs each generation worker of "
                                "this machine has beyond its own statement (CPUs // workers - 1, 0 for 2 workers "
                                "on 2 CPUs), and the server's setting for a worker that joins a run")
    grouped_plan: bool = Field(
        True, description="answer a skeleton's analysis statements from one grouped scan per rule set where the "
                          "metric's aggregates allow it (0: one statement per answer)")
    readonly_password: str | None = Field(
        None, description="password of every per-domain read-only role (dibench_ro_<schema>); unset: each role "
                          "has its own, derived from the install's generated key. Never commit it")
    ingest_tx_rows: int = Field(
        20_000, description="an ingest plan of at most this many rows is written in one transaction (all or "
                            "nothing); a larger one in concurrent batch transactions (each all or nothing)")
    write_batch: int = Field(5_000, description="rows per transaction of a batched graph write")
    verify_workers: int = Field(
        default_factory=lambda: max(1, min(4, os.cpu_count() or 1)),
        description="metrics whose rule edges ingest verifies at once, each on its own connection "
                    "(default: CPUs, at most 4)")
    write_workers: int = Field(
        default_factory=lambda: max(1, min(4, os.cpu_count() or 1)),
        description="concurrent transactions of a batched graph write (default: CPUs, at most 4)")
    data_dir: Path = Field(REPO_ROOT.parent / "shared" / "data", description="real datasets (Berka, Pagila, Spider)")
    llm_provider: str | None = Field(None, description="'module:factory' returning a langchain-core chat model")
    llm: str | None = Field(None, description="built-in LLM provider: 'openai' (any OpenAI-compatible server) or "
                                             "'ollama'; 'module:factory' works here too")
    llm_base_url: str | None = Field(None, description="base URL of the OpenAI-compatible server (ends in /v1)")
    llm_model: str | None = Field(None, description="model name the server knows")
    llm_api_key: str | None = Field(None, description="API key (else OPENAI_API_KEY; local servers ignore it)")
    llm_context: int = Field(4096, description="context window of the model, tokens: prompts are bounded by it")
    llm_timeout_s: float = Field(120.0, description="timeout of one LLM request, seconds")
    llm_max_tokens: int = Field(1024, ge=16, description="reply limit of a request without a stage limit of its "
                                                        "own (the agent): max_tokens, never more than the context "
                                                        "leaves after the prompt")
    llm_record: Path | None = Field(None, description="append every chat request and reply to this JSONL file "
                                                     "(a cassette the tests replay over their stub server)")
    llm_retries: int = Field(3, description="retries of a transient provider error (5xx, 429, lost connection)")
    llm_backoff_s: float = Field(1.0, description="first backoff between retries, doubled each time")
    llm_cache: bool = Field(True, description="cache LLM replies on disk, keyed by (model, prompt hash)")
    llm_cache_dir: Path | None = Field(None, description="reply cache folder (default: <state_dir>/llm-cache)")
    llm_max_calls: int | None = Field(None, description="LLM calls allowed per process; beyond it stages fall "
                                                        "back to their deterministic default")
    llm_judge: bool = Field(True, description="run the stage-2 LLM judge when a model is configured")
    api_token: str | None = Field(None, description="bearer token for write endpoints of the HTTP API")
    api_read_token: str | None = Field(None, description="bearer token required for reads, if set")
    api_pack_roots: list[Path] = Field(
        default_factory=lambda: [REPO_ROOT / "domains"],
        description="folders under which the HTTP API accepts a rule update's `pack` path")
    lease_wait_s: float = Field(30.0, ge=0, description="how long an ingest, rule update or generate waits for "
                                                        "its domain's write lease before it refuses")
    api_allowed_hosts: list[str] = Field(
        default_factory=list,
        description="Host header names the HTTP API answers besides its bound address and localhost names")
    reviewers: list[Reviewer] = Field(
        default_factory=list,
        description="people of the review app, as JSON: [{\"name\": ..., \"token\": ..., \"role\": ...}], "
                    "role reviewer (default), reader (reads, saves nothing) or baseline (blind mode only)")
    seed: int = 42

    @model_validator(mode="after")
    def _own_secrets(self) -> Settings:
        if not self.neo4j_password:
            self.neo4j_password = secrets.ensure_secret(self.state_dir, secrets.NEO4J)
        self.database_url = self._with_local_password(self.database_url)
        return self

    def _with_local_password(self, url: str) -> str:
        parts = urlsplit(url)
        local = (parts.scheme.startswith("postgresql") and parts.hostname in {"127.0.0.1", "localhost", "::1"}
                 and parts.port == self.pg_port and parts.username == LOCAL_ADMIN)
        if not local or parts.password is not None:
            return url
        password = secrets.ensure_secret(self.state_dir, secrets.POSTGRES_ADMIN)
        host = f"[{parts.hostname}]" if ":" in (parts.hostname or "") else parts.hostname
        netloc = f"{quote(LOCAL_ADMIN)}:{quote(password, safe='')}@{host}:{parts.port}"
        return urlunsplit(parts._replace(netloc=netloc))

    def readonly_password_for(self, role: str) -> str:
        """The password `role` (a per-domain read-only role) is created with and logs in with."""
        if self.readonly_password:
            return self.readonly_password
        return secrets.derived_password(secrets.ensure_secret(self.state_dir, secrets.READONLY_KEY), role)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings, _TomlSource(settings_cls), file_secret_settings)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
