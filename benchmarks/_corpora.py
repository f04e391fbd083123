"""The retrieval-quality corpora and a fingerprint cache, so that each corpus is embedded once per machine.

Two corpora, one relevant document per query:
  code   the stdlib function pairs of _workload.function_pairs (query = first docstring sentence, document = the
         function's source without its docstring, stored as modality "code")
  prose  Debian package descriptions (query = the one-line synopsis, document = the long description, modality
         "text"), from apt's English translation index on this machine. Needs the index once:
         `apt-get update -o Acquire::Languages=en` (the Docker images' apt config turns translations off).
         Kept: one package per distinct first paragraph (the -dev/-doc/-data siblings of a package repeat it),
         long descriptions of 25..250 words, synopses of ≥ 3 words that no earlier package used, no
         transitional/dummy/debug-symbol packages; a seeded sample of --prose-docs of them.

Two held-out corpora, for EVALUATION ONLY (benchmarks/bench_held_out.py): nothing may be fitted or tuned on them
(not the fusion, not the head re-scorer, not a threshold); they exist to show whether what was fitted on code/prose
carries over to text it never saw.
  man         system manual pages on this machine (/usr/share/man/man1..man8, gzipped groff, man(7) macros; mdoc
              pages and `.so` redirects left out): query = the NAME line's description (after "\\-"), document =
              the DESCRIPTION section's text, requests dropped (the words of the font macros .B/.I/.BR/... kept),
              escapes (\\fB, \\-, \\(em, ...) resolved; descriptions of 25..300 words, queries of >= 3 words, one page
              per distinct query and per distinct description (first in path order), the Google Cloud SDK's
              generated gcloud_* pages left out (4,000 near-identical templates of one CLI); seeded sample of n.
  thirdparty  (first docstring sentence -> function source without docstring) pairs, _workload.function_pairs, of
              the packages that the E7 code encoder's training held out whole (code_encoder_data.DEV_PACKAGES:
              networkx from the venv, flask/paramiko/marshmallow from code_encoder_data.EXTRA_DIR, installed by
              `code_encoder_data.py --fetch`). E7 never trained on them but its model selection read them (they are
              its dev split); the re-scorer, fitted on the stdlib, never saw them. Pairs whose query or code equals a
              stdlib pair's are dropped; every pair of the three small packages is kept, networkx's sampled (seeded)
              to fill n.

The cache (benchmarks/results/fingerprints/<corpus>-<key>.pkl, gitignored) holds every document's and query's
full fingerprint from the pipeline plus the token ids of its forward, keyed by the corpus texts and the
backbone (fp32/int8). Spaces whose embedders changed since (the lexical ones, E6 and E13) are recomputed from the
text and token ids by `refresh_lexical`, so changing an analyzer does not mean re-running the transformer.
"""

from __future__ import annotations

import gzip
import hashlib
import pickle
import random
import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

CACHE_DIR = Path(__file__).resolve().parent / "results" / "fingerprints"
APT_LISTS = Path("/var/lib/apt/lists")
_SKIP = re.compile(r"transitional|dummy package|debug symbols|metapackage|meta-package|\(data files\)|documentation",
                   re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Item:
    query: str
    document: str
    where: str


@dataclass
class CorpusData:
    name: str
    modality: str  # of the documents; queries are "text", as search_graph embeds them
    items: list[Item]


def code_corpus() -> CorpusData:
    from _workload import function_pairs

    return CorpusData("code", "code", [Item(p.query, p.document, p.where) for p in function_pairs()])


def _translation_records() -> list[tuple[str, str, str]]:
    """(package, synopsis, long description) from apt's Translation-en index (main, bookworm)."""
    files = sorted(APT_LISTS.glob("*_dists_bookworm_main_i18n_Translation-en*"))
    if not files:
        raise SystemExit("no Translation-en index: run `apt-get update -o Acquire::Languages=en` first")
    raw = subprocess.run(["/usr/lib/apt/apt-helper", "cat-file", str(files[0])], capture_output=True, text=True,
                         check=True).stdout
    out = []
    for block in raw.split("\n\n"):
        package = synopsis = None
        body: list[str] = []
        for line in block.splitlines():
            if line.startswith("Package: "):
                package = line[9:].strip()
            elif line.startswith("Description-en: "):
                synopsis = line[16:].strip()
            elif line.startswith(" ") and synopsis is not None:
                body.append("" if line.strip() == "." else line.strip())
        if package and synopsis and body:
            paragraphs = [" ".join(p.split()) for p in "\n".join(body).split("\n\n") if p.strip()]
            out.append((package, synopsis, "\n\n".join(paragraphs)))
    return out


def eligible_prose() -> list[Item]:
    """Every package description the prose corpus may draw (the module's rules), in the index's order; also what
    E7's prose training pairs are mined from, less the corpus's sample (benchmarks/prose_encoder_data.py)."""
    seen_first: set[str] = set()
    seen_query: set[str] = set()
    eligible: list[Item] = []
    for package, synopsis, long in _translation_records():
        first = first_paragraph_key(long)
        q_key = synopsis.lower()
        words = len(long.split())
        if first in seen_first or q_key in seen_query:
            continue
        seen_first.add(first)
        seen_query.add(q_key)
        if not 25 <= words <= 250 or len(synopsis.split()) < 3 or _SKIP.search(synopsis):
            continue
        eligible.append(Item(synopsis, long, package))
    return eligible


def first_paragraph_key(description: str) -> str:
    """What makes two descriptions the same package's (-dev/-doc/-data siblings repeat the first paragraph)."""
    return description.split("\n\n")[0].lower()[:300]


def prose_corpus(n_docs: int = 2400, seed: int = 20261126) -> CorpusData:
    eligible = eligible_prose()
    chosen = sorted(random.Random(seed).sample(range(len(eligible)), min(n_docs, len(eligible))))
    return CorpusData("prose", "text", [eligible[i] for i in chosen])


# --- held-out corpora: evaluation only, never fit or tune anything on them ----------------------------------------

MAN_ROOT = Path("/usr/share/man")
MAN_SECTIONS = ("man1", "man2", "man3", "man4", "man5", "man6", "man7", "man8")
_FONT_MACROS = frozenset({"B", "I", "BR", "BI", "IB", "IR", "RB", "RI", "SM", "SB"})
_GROFF_NAMED = {"em": "\u2014", "en": "\u2013", "aq": "'", "lq": '"', "rq": '"', "oq": "'", "cq": "'", "dq": '"',
                "bu": "\u2022", "co": "\u00a9", "rg": "\u00ae", "tm": "\u2122", "mi": "-", "hy": "-", "ti": "~",
                "ha": "^", "rs": "\\", "dg": "\u2020", "de": "\u00b0", "mu": "\u00d7", "<=": "<=", ">=": ">=",
                "->": "->", "<-": "<-", "ga": "`", "aa": "'", "Fo": "\u00ab", "Fc": "\u00bb", "pl": "+", "eq": "="}
_GROFF_SINGLE = {"-": "-", "e": "\\", "\\": "\\", " ": " ", "~": " ", "0": " ", "'": "'", "`": "`", ".": ".",
                 "(": "("}
_GROFF_ESCAPE = re.compile(
    r"\\f(?:\(..|\[[^\]]*\]|.)"  # fonts: \fB \f(CW \f[B]
    r"|\\s[+-]?(?:\d|\(\d\d|\[\d*\])"  # sizes
    r"|\\[*]?\((..)"  # named characters and strings: \(em, \*(lq
    r"|\\[*]?\[([^\]]*)\]"  # \[em], \*[lq]
    r"|\\\*(.)"  # one-character strings: \*R
    r"|\\[kgnYmM](?:\(..|\[[^\]]*\]|.)"  # registers and colours
    r"|\\[hvwlLxbNoDXZARCS]'[^']*'"  # motions and the like: \h'...'
    r"|\\(.)", re.S)


def _groff_escape(m: re.Match[str]) -> str:
    name = m.group(1) or m.group(2)
    if name is not None:
        return _GROFF_NAMED.get(name, "")
    if m.group(3) is not None:
        return {"R": "\u00ae", "q": '"'}.get(m.group(3), "")
    return "" if m.group(4) is None else _GROFF_SINGLE.get(m.group(4), "")


def groff_text(line: str) -> str:
    """A line of groff with its comment cut and its escapes resolved (fonts, sizes, motions dropped)."""
    return _GROFF_ESCAPE.sub(_groff_escape, line.split('\\"')[0])


def _man_sections(source: str) -> dict[str, list[str]]:
    """Section title -> its text lines: requests dropped, the words of the font macros (.B, .I, .BR, ...) kept."""
    out: dict[str, list[str]] = {}
    current = None
    for raw in source.splitlines():
        if raw.startswith((".SH", "'SH")):
            current = " ".join(groff_text(raw[3:]).replace('"', " ").split()).upper()
            out.setdefault(current, [])
        elif current is None:
            continue
        elif raw.startswith((".", "'")):
            parts = raw[1:].split(None, 1)
            if len(parts) == 2 and parts[0] in _FONT_MACROS:
                out[current].append(" ".join(a or b for a, b in re.findall(r'"([^"]*)"|(\S+)', parts[1])))
        else:
            out[current].append(raw)
    return out


def _man_records(root: Path = MAN_ROOT) -> list[tuple[str, str, str]]:
    """(section/page, NAME description, DESCRIPTION text) of every man(7) page under `root`, in path order."""
    out = []
    for section in MAN_SECTIONS:
        for path in sorted((root / section).glob("*.gz")):
            if path.is_symlink():
                continue
            try:
                source = gzip.decompress(path.read_bytes()).decode("utf-8", errors="replace")
            except (OSError, EOFError):
                continue
            if source.lstrip().startswith(".so ") or "\n.Sh " in source or "\n.Dd" in source:
                continue  # a redirect to another page, or an mdoc page (a macro set of its own)
            sections = _man_sections(source)
            name = " ".join(groff_text(" ".join(sections.get("NAME", []))).split())
            dash = re.search(r"\s[-\u2013\u2014]+\s", " " + name)
            if dash and sections.get("DESCRIPTION"):
                out.append((f"{section}/{path.name[:-3]}", name[dash.end() - 1 :].strip(),
                            " ".join(groff_text(" ".join(sections["DESCRIPTION"])).split())))
    return out


def man_corpus(n_docs: int = 1000, seed: int = 20261127) -> CorpusData:
    """EVALUATION ONLY (see the module's docstring): manual pages, NAME description -> DESCRIPTION."""
    seen_q: set[str] = set()
    seen_d: set[str] = set()
    eligible: list[Item] = []
    for where, query, text in _man_records():
        q_key, d_key = query.lower(), text.lower()
        if q_key in seen_q or d_key in seen_d:
            continue
        seen_q.add(q_key)
        seen_d.add(d_key)
        if where.split("/")[1].startswith("gcloud") or not 25 <= len(text.split()) <= 300 or len(query.split()) < 3:
            continue
        eligible.append(Item(query, text, where))
    chosen = sorted(random.Random(seed).sample(range(len(eligible)), min(n_docs, len(eligible))))
    return CorpusData("man", "text", [eligible[i] for i in chosen])


def thirdparty_corpus(n_docs: int = 1000, seed: int = 20261127) -> CorpusData:
    """EVALUATION ONLY (see the module's docstring): E7's held-out packages, docstring sentence -> function."""
    from _workload import function_pairs
    from code_encoder_data import DEV_PACKAGES, EXTRA_DIR, SITE, SKIP_DIRS

    stdlib = function_pairs()
    stdlib_q = {p.query.lower() for p in stdlib}
    stdlib_d = {" ".join(p.document.split()) for p in stdlib}
    seen_q: set[str] = set()
    seen_d: set[str] = set()
    by_package: dict[str, list[Item]] = {}
    for name in DEV_PACKAGES:
        root = SITE / name if (SITE / name).is_dir() else EXTRA_DIR / name
        if not root.is_dir():
            raise SystemExit(f"{name} is neither in the venv nor in {EXTRA_DIR}: run code_encoder_data.py --fetch")
        for p in function_pairs(root=root, skip=SKIP_DIRS):
            q_key, d_key = p.query.lower(), " ".join(p.document.split())
            if q_key in seen_q or d_key in seen_d or q_key in stdlib_q or d_key in stdlib_d:
                continue
            seen_q.add(q_key)
            seen_d.add(d_key)
            by_package.setdefault(name, []).append(Item(p.query, p.document, f"{name}/{p.where}"))
    largest = max(by_package, key=lambda k: len(by_package[k]))
    items = [it for name, its in by_package.items() if name != largest for it in its]
    rest = by_package[largest]
    fill = sorted(random.Random(seed).sample(range(len(rest)), max(0, min(len(rest), n_docs - len(items)))))
    items += [rest[i] for i in fill]
    return CorpusData("thirdparty", "code", items[:n_docs])


def corpus(name: str, **kw: Any) -> CorpusData:
    return {"code": code_corpus, "prose": prose_corpus, "man": man_corpus,
            "thirdparty": thirdparty_corpus}[name](**kw)


# --- the fingerprint cache -----------------------------------------------------------------------------------------

@dataclass
class Embedded:
    docs: list[dict]  # fingerprints, doc i dated t0 - n + i (one second apart), global position i + 1
    queries: list[dict]  # fingerprints of the queries, dated t0, at the head of the store
    doc_ids: list[np.ndarray]  # non-special token ids of each document's forward (E13's input)
    query_ids: list[np.ndarray]
    t0: float


def _key(data: CorpusData, runtime: str) -> str:
    h = hashlib.sha256(runtime.encode())
    for it in data.items:
        h.update(it.query.encode())
        h.update(b"\0")
        h.update(it.document.encode())
        h.update(b"\1")
    return h.hexdigest()[:16]


def embed_corpus(data: CorpusData, pipeline: Any, batch: int = 128, log: Any = print) -> Embedded:
    """Every document's and query's fingerprint, from the cache when there is one for these texts and this
    backbone; else computed (slow: the transformer) and cached."""
    from contextgraph.embedders.pipeline import Draft

    runtime = str(getattr(pipeline.backbone, "runtime", "")) + str(getattr(pipeline.backbone, "quantized", ""))
    path = CACHE_DIR / f"{data.name}-{_key(data, runtime)}.pkl"
    if path.exists():
        with open(path, "rb") as f:
            return current_e7(data, pickle.load(f), pipeline, log)
    n = len(data.items)
    t0 = time.time()
    out = Embedded([], [], [], [], t0)
    started = time.perf_counter()
    for kind, texts, modality in (("docs", [it.document for it in data.items], data.modality),
                                  ("queries", [it.query for it in data.items], "text")):
        for lo in range(0, n, batch):
            chunk = texts[lo : lo + batch]
            if kind == "docs":
                drafts = [Draft(text=t, modality=modality, timestamp=t0 - n + lo + i, session_position=lo + i,
                                global_position=lo + i + 1) for i, t in enumerate(chunk)]
            else:
                drafts = [Draft(text=t, modality=modality, timestamp=t0, session_position=0, global_position=n + 1)
                          for t in chunk]
            fps = pipeline.embed(drafts)
            getattr(out, kind).extend(fps)
            # the forward's non-special token ids, from the backbone's own tokenizer (same truncation)
            encodings = pipeline.backbone._tokenizer.encode_batch(chunk)
            ids = [np.asarray(e.ids, dtype=np.int32)[~np.asarray(e.special_tokens_mask, dtype=bool)]
                   for e in encodings]
            (out.doc_ids if kind == "docs" else out.query_ids).extend(ids)
            log(f"[{data.name}] embedded {kind} {lo + len(chunk)}/{n} ({time.perf_counter() - started:.0f} s)")
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as f:
        pickle.dump(out, f, protocol=pickle.HIGHEST_PROTOCOL)
    tmp.rename(path)
    return current_e7(data, out, pipeline, log)


def with_fp32_documents(data: CorpusData, emb: Embedded) -> Embedded:
    """`emb` with every document's fingerprint (E7 aside: its model is int8 either way) from the fp32 graph's
    cache: a store filled before CONTEXTGRAPH_INT8 was turned on, searched with the int8 graph's queries."""
    path = CACHE_DIR / f"{data.name}-{_key(data, 'onnxruntime-fp32')}.pkl"
    if not path.exists():
        raise SystemExit(f"no fp32 fingerprints cached for {data.name}: run the benchmark once without int8")
    with open(path, "rb") as f:
        fp32: Embedded = pickle.load(f)
    docs = [{**old, 7: new[7]} for old, new in zip(fp32.docs, emb.docs)]
    return Embedded(docs, emb.queries, emb.doc_ids, emb.query_ids, emb.t0)


def current_e7(data: CorpusData, emb: Embedded, pipeline: Any, log: Any = print) -> Embedded:
    """E7 as the pipeline's code encoder makes it, in place: E7 has a model of its own (or none: Settings.code_model),
    so the shared forward's cache is kept and E7 alone is cached per method (the method names the model's digest)."""
    method = pipeline.method(7)
    path = CACHE_DIR / f"{data.name}-e7-{hashlib.sha256((_key(data, '') + method).encode()).hexdigest()[:16]}.pkl"
    if path.exists():
        with open(path, "rb") as f:
            docs, queries = pickle.load(f)
    else:
        started = time.perf_counter()
        docs = pipeline.embed_space(7, [it.document for it in data.items], [data.modality] * len(data.items))
        queries = pipeline.embed_space(7, [it.query for it in data.items], ["text"] * len(data.items))
        log(f"[{data.name}] E7 for {method[:40]}: {time.perf_counter() - started:.0f} s")
        CACHE_DIR.mkdir(parents=True, exist_ok=True)
        with open(path.with_suffix(".tmp"), "wb") as f:
            pickle.dump((docs, queries), f, protocol=pickle.HIGHEST_PROTOCOL)
        path.with_suffix(".tmp").rename(path)
    for fp, vector in zip(emb.docs, docs):
        fp[7] = vector
    for fp, vector in zip(emb.queries, queries):
        fp[7] = vector
    return emb


def refresh_lexical(data: CorpusData, emb: Embedded, pipeline: Any) -> None:
    """Recompute E6 (from the text) and E13 (from the forward's token ids) with the current embedders, in place."""
    from contextgraph.fingerprint import Sparse  # noqa: F401  (the embedders return it)

    e6 = next(e for e in pipeline.embedders if e.space == 6)
    e13 = next(e for e in pipeline.embedders if e.space == 13)
    for fps, texts, ids in ((emb.docs, [it.document for it in data.items], emb.doc_ids),
                            (emb.queries, [it.query for it in data.items], emb.query_ids)):
        for fp, text, tok in zip(fps, texts, ids):
            fp[6] = e6.embed_text(text)
            fp[13] = e13.from_ids(tok) if hasattr(e13, "from_ids") else fp[13]


def halves(n: int, seed: int = 1234) -> dict[str, np.ndarray]:
    """A seeded split of the queries into tune and test halves (and all)."""
    order = np.random.default_rng(seed).permutation(n)
    return {"all": np.arange(n), "tune": np.sort(order[: n // 2]), "test": np.sort(order[n // 2 :])}


def write_texts(data: CorpusData, directory: Path) -> None:  # pragma: no cover - for eyeballing a corpus
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / f"{data.name}.tsv", "w") as f:
        for it in data.items:
            f.write(f"{it.where}\t{it.query}\t{' '.join(it.document.split())[:300]}\n")


def sizes(data: CorpusData) -> dict[str, Any]:
    q = [len(it.query.split()) for it in data.items]
    d = [len(it.document.split()) for it in data.items]
    return {"pairs": len(data.items), "query_words_median": float(np.median(q)),
            "doc_words_median": float(np.median(d))}



