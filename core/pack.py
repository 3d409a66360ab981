"""Read a domain pack from disk into validated models.

A pack is `pack.yaml`, a metric catalog (`metrics.yaml`) and `rules/*.md` Markdown documents
with YAML front matter. Every file goes through one door, `read_pack_file`: a regular file
inside the pack folder (a symlink may not lead out of it), at most MAX_PACK_FILE_BYTES, UTF-8
text. Every problem becomes a PackError naming file, field (or byte offset) and problem; all
problems of a pack are collected before raising, so a user fixes them in one pass. Reading a
pack runs none of its code: its loader (`pack.yaml` loader.entry) runs only in `domain load`.
"""
from __future__ import annotations

import codecs
import hashlib
import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from dibench.core.config import REPO_ROOT, get_settings
from dibench.core.errors import PackError, PackErrors
from dibench.core.models import MetricCatalog, MetricSpec, PackSpec, RuleFrontMatter

DOMAINS_DIR = REPO_ROOT / "domains"
MIN_RULE_WORDS = 50
# A pack file larger than this is refused: real catalogs of hundreds of metrics are a few
# hundred KB, and a symlink to /dev/zero or a huge file must not be read whole.
MAX_PACK_FILE_BYTES = 8 << 20


@dataclass(frozen=True)
class RuleDoc:
    front: RuleFrontMatter
    body: str
    path: Path
    content_hash: str

    @property
    def id(self) -> str:
        return self.front.id

    def word_count(self) -> int:
        return len(self.body.split())


@dataclass(frozen=True)
class Pack:
    root: Path
    spec: PackSpec
    metrics: tuple[MetricSpec, ...]
    rules: tuple[RuleDoc, ...]
    metric_by_id: dict[str, MetricSpec] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    # Rule documents left out of this pack (`load_pack(..., leave_out_refused_rules=True)`), one line
    # each naming the file and the reason.
    refused: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def schema(self) -> str:
        return self.spec.db_schema

    def rule(self, rule_id: str) -> RuleDoc:
        for r in self.rules:
            if r.id == rule_id:
                return r
        raise KeyError(rule_id)


def _known_packs_file() -> Path:
    return get_settings().state_dir / "packs.json"


def _known_packs() -> dict[str, str]:
    try:
        known = json.loads(_known_packs_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in known.items()} if isinstance(known, dict) else {}


def _write_known_packs(known: dict[str, str]) -> None:
    path = _known_packs_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(json.dumps(known, indent=1, sort_keys=True), encoding="utf-8")
    tmp.replace(path)  # a reader sees the old list or the new one, never half of one


def remember_pack(pack: Pack) -> None:
    """Let later commands name this pack by its name, wherever its folder is (a built-in one needs no entry)."""
    if (DOMAINS_DIR / pack.name / "pack.yaml").is_file():
        return  # the built-in domain of that name is found first anyway
    known = _known_packs()
    if known.get(pack.name) != str(pack.root.resolve()):
        _write_known_packs({**known, pack.name: str(pack.root.resolve())})


def forget_pack(name: str) -> None:
    known = _known_packs()
    if known.pop(name, None) is not None:
        _write_known_packs(known)


def resolve_pack_path(name_or_path: str | Path) -> Path:
    """A pack folder: the path given, a built-in domain of that name, or a pack loaded or ingested here
    from a folder of its own under that name."""
    p = Path(name_or_path)
    if (p / "pack.yaml").is_file():
        return p
    if (DOMAINS_DIR / str(name_or_path) / "pack.yaml").is_file():
        return DOMAINS_DIR / str(name_or_path)
    known = _known_packs().get(str(name_or_path))
    if known is not None and (Path(known) / "pack.yaml").is_file():
        return Path(known)
    raise PackErrors([PackError(str(p / "pack.yaml"), "-", "no pack.yaml here, no built-in domain and no pack loaded "
                                "or ingested under that name: give the pack's folder")])


def _rel(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _pydantic_errors(file: Path, exc: ValidationError, prefix: str = "", whole: str = "-") -> list[PackError]:
    """One PackError per pydantic error; `whole` names the field of model-level (cross-field) errors."""
    out = []
    for err in exc.errors():
        loc = ".".join(str(x) for x in err["loc"])
        out.append(PackError(_rel(file), f"{prefix}{loc}" or whole, err["msg"]))
    return out


def _refused(file: Path, where: str, problem: str) -> PackErrors:
    return PackErrors([PackError(_rel(file), where, problem)])


def read_pack_file(file: Path, root: Path | None = None) -> str:
    """The text of one pack file: the only way a pack file is read. Refused, in one PackError
    naming the file: a path that leads out of `root` (through a symlink or `..`), anything but a
    regular file (a folder, FIFO, device or socket: opened without blocking, then checked on the
    open descriptor), more than MAX_PACK_FILE_BYTES, and text that is not UTF-8 (the byte offset
    of the first bad byte; a NUL byte; a UTF-16 byte-order mark). A UTF-8 byte-order mark is
    dropped. `root` None: a document named by the user on its own (update-rule), any folder."""
    if root is not None:
        real_root, real = root.resolve(), file.resolve()
        if real != real_root and real_root not in real.parents:
            raise _refused(file, "file", "leads out of the pack folder (a symlink or `..`): pack files must lie inside it")
    try:
        fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise _refused(file, "file", "missing") from None
    except OSError as exc:
        raise _refused(file, "file", f"cannot read: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _refused(file, "file", "not a regular file (a folder, FIFO, device or socket)")
        if st.st_size > MAX_PACK_FILE_BYTES:
            raise _refused(file, "file", f"{st.st_size:,} bytes: larger than {MAX_PACK_FILE_BYTES:,}")
        chunks, size = [], 0
        while size <= MAX_PACK_FILE_BYTES and (chunk := os.read(fd, 1 << 16)):
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise _refused(file, "file", f"cannot read: {exc.strerror}") from None
    finally:
        os.close(fd)
    if size > MAX_PACK_FILE_BYTES:
        raise _refused(file, "file", f"larger than {MAX_PACK_FILE_BYTES:,} bytes")
    return _decoded(file, b"".join(chunks))


def _decoded(file: Path, data: bytes) -> str:
    skipped = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise _refused(file, "byte 0", "UTF-16 text (byte-order mark): save the file as UTF-8")
    nul = data.find(b"\x00")
    if nul >= 0:
        raise _refused(file, f"byte {nul}", "binary content (a NUL byte): pack files are UTF-8 text")
    try:
        return data[skipped:].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _refused(file, f"byte {exc.start + skipped}",
                       f"not valid UTF-8 ({exc.reason}): save the file as UTF-8") from None


def _load_yaml(file: Path, root: Path) -> Any:
    text = read_pack_file(file, root)
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "-"
        raise PackErrors([PackError(_rel(file), where, f"YAML syntax error: {getattr(exc, 'problem', exc)}")]) from exc


def split_front_matter(text: str) -> tuple[str | None, str]:
    """Return (front matter YAML or None, Markdown body)."""
    if not text.startswith("---"):
        return None, text
    parts = text.split("\n---", 1)
    if len(parts) != 2:
        return None, text
    head = parts[0][3:]
    body = parts[1].split("\n", 1)[1] if "\n" in parts[1] else ""
    return head, body


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def read_rule(file: Path, root: Path | None = None) -> RuleDoc:
    """Parse one rule document (inside pack folder `root`, when given); raises PackErrors naming
    the file and field."""
    text = read_pack_file(file, root)
    head, body = split_front_matter(text)
    if head is None:
        raise PackErrors([PackError(_rel(file), "front matter", "missing: the document must start with '---' YAML front matter (id, title, version, effective_date, owner, rule_type)")])
    try:
        data = yaml.safe_load(head)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"front matter line {mark.line + 1}" if mark else "front matter"
        raise PackErrors([PackError(_rel(file), where, f"YAML syntax error: {getattr(exc, 'problem', exc)}")]) from exc
    if not isinstance(data, dict):
        raise PackErrors([PackError(_rel(file), "front matter", "must be a YAML mapping")])
    try:
        front = RuleFrontMatter.model_validate(data)
    except ValidationError as exc:
        # The front matter's only cross-field check is rule_type against its effects.
        raise PackErrors(_pydantic_errors(file, exc, whole="rule_type")) from exc
    if not body.strip():
        raise PackErrors([PackError(_rel(file), "body", "the document body is missing")])
    return RuleDoc(front, body.strip(), file, content_hash(text))


def short_rule_warning(doc: RuleDoc) -> str | None:
    """Real policies can be one paragraph: a short body is worth a look, not a refusal."""
    n = doc.word_count()
    if n >= MIN_RULE_WORDS:
        return None
    return f"{_rel(doc.path)}: body: {n} words, shorter than {MIN_RULE_WORDS}; check that the document is complete"


def load_pack(name_or_path: str | Path, *, leave_out_refused_rules: bool = False) -> Pack:
    """Read and validate a pack; raises PackErrors naming every problem. With
    `leave_out_refused_rules` (ingest), a rule document that cannot be read is left out instead,
    named in `Pack.refused`, and the rest of the pack stands."""
    root = resolve_pack_path(name_or_path)
    errors: list[PackError] = []
    rule_errors: list[PackError] = []
    pack_file = root / "pack.yaml"
    raw = _load_yaml(pack_file, root)
    try:
        spec = PackSpec.model_validate(raw)
    except ValidationError as exc:
        raise PackErrors(_pydantic_errors(pack_file, exc)) from exc

    metrics_file = root / spec.metrics
    metrics: list[MetricSpec] = []
    raw_m = _load_yaml(metrics_file, root)
    try:
        metrics = list(MetricCatalog.model_validate(raw_m).metrics)
    except ValidationError as exc:
        errors.extend(_pydantic_errors(metrics_file, exc))
    seen: dict[str, int] = {}
    for i, m in enumerate(metrics):
        if m.id in seen:
            errors.append(PackError(_rel(metrics_file), f"metrics.{i}.id", f"duplicate metric id {m.id!r} (also metrics.{seen[m.id]})"))
        seen.setdefault(m.id, i)

    rules: list[RuleDoc] = []
    rule_dir = root / spec.rules
    if not rule_dir.is_dir():
        errors.append(PackError(_rel(rule_dir), "-", "rules folder missing"))
    elif rule_dir.resolve() != root.resolve() and root.resolve() not in rule_dir.resolve().parents:
        errors.append(PackError(_rel(rule_dir), "file", "leads out of the pack folder (a symlink or `..`)"))
    else:
        seen_rules: dict[str, Path] = {}
        for f in sorted(rule_dir.glob("*.md")):
            try:
                doc = read_rule(f, root)
            except PackErrors as exc:
                rule_errors.extend(exc.errors)
                continue
            if doc.id in seen_rules:
                rule_errors.append(PackError(_rel(f), "id", f"duplicate rule id {doc.id!r} (also {_rel(seen_rules[doc.id])})"))
                continue
            seen_rules[doc.id] = f
            rules.append(doc)
    if not leave_out_refused_rules:
        errors.extend(rule_errors)
    if errors:
        raise PackErrors(errors)
    warnings = tuple(w for w in map(short_rule_warning, rules) if w)
    refused = tuple(f"{e}; left out (the graph keeps what it had of this document)" for e in rule_errors)
    return Pack(root, spec, tuple(metrics), tuple(rules), {m.id: m for m in metrics}, warnings, refused)

