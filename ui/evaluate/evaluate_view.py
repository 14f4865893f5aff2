"""Evaluate's renderers: question-set and configuration pickers, the run / results / sweep tabs, a run's leaderboard,
charts and per-question drill-down (``views/evaluate.py`` lays them out)."""

from __future__ import annotations

import hashlib

import streamlit as st

from rag_core.config import RAGConfig
from rag_core.evaluation.regression import ALPHA, MIN_DROP, Z
from rag_core.evaluation.results import ResultsStore
from rag_core.evaluation.runner import NOT_FOUND_METRICS, QUALITY_METRICS, STRATEGIES
from ui import charts, runs, state
from ui.evaluate import eval_jobs
from ui.safe_text import md_escape, md_inert
from ui.state import KEEP

RUN_KEY, SWEEP_KEY, ACTIVE = "eval_run_id", "eval_sweep_id", "(active configuration)"
RESULTS_TAB = ":material/emoji_events: Results"  # the guided demo opens the page on it
SOURCES = ["Built-in golden set", "Upload CSV/JSONL", "BEIR folder", "Saved question sets"]
SOURCE_KEY, UPLOADED_KEY = "eval_source", "eval_uploaded_set"  # UPLOADED_KEY: (file name, parsed question set)
PARSED_KEY = "eval_upload_parsed"  # ((file name, SHA-256 of its bytes), question set or the refusal)
BREAKDOWN_METRICS = (*QUALITY_METRICS, *NOT_FOUND_METRICS)
METRIC_HELP = {
    "complete": "Share of answerable questions with every evidence place (every answer target) in the retrieved "
                "context. Unanswerable questions are left out of this and every recall metric.",
    "said_not_found": "Agent only: share of unanswerable questions (type null) where it said the documents do not "
                      "answer. Higher is better; empty for search-only runs.",
    "false_not_found": "Agent only: share of answerable questions where it wrongly said the documents do not answer. "
                       "Lower is better; empty for search-only runs.",
}


@st.cache_resource(show_spinner="Loading the BEIR folder…", max_entries=2)
def beir_folder(path: str, split: str):
    from rag_core.evaluation.questions import load_beir

    return load_beir(path, split)


RESTORED_KEY = "eval_form_from_job"  # the form was set from a running job's settings once this session
_SOURCE_OF_KIND = {"golden": 0, "upload": 1, "beir": 2, "drafted": 3}


def form_from_running_job():
    """After a reload (a new session) while an evaluation runs, the form shows that run's question set,
    configurations and strategies (read from the job's settings) instead of the defaults ("golden: 60 questions"
    above a drafted set's run); once a session, and never over a choice already made. Returns that job, or None."""
    from ui.evaluate import draft_view

    if st.session_state.get(RESTORED_KEY):
        return None
    st.session_state[RESTORED_KEY] = True
    job = eval_jobs.running()
    if job is None or job.kind != "evaluation" or SOURCE_KEY in st.session_state:
        return None
    given = job.settings
    name, kind = str(given.get("question_set", "")), given.get("question_set_kind")
    saved_sets = state.guarded(lambda: draft_view.store().list(), "Saved question sets") or []
    if kind is None:  # a job queued before its settings named the kind
        kind = "golden" if name == "golden" else "drafted" if name in saved_sets else None
    if kind not in _SOURCE_OF_KIND:
        return None
    st.session_state[SOURCE_KEY] = SOURCES[_SOURCE_OF_KIND[kind]]
    if kind == "drafted" and name in saved_sets:
        st.session_state[draft_view.SAVED_KEY] = name
    if kind == "beir" and given.get("question_set_source"):
        st.session_state["eval_beir_path"] = str(given["question_set_source"])
    saved = set(state.guarded(state.config_store().list, "Saved configurations") or [])
    active = state.active_config().name
    st.session_state["eval_configs"] = list(dict.fromkeys(
        ACTIVE if n == active or n not in saved else n for n in given.get("configs", [])))
    st.session_state["eval_strategies"] = [s for s in given.get("strategies", []) if s in STRATEGIES]
    return job


def _parse_once(parse, name: str, data: bytes):
    """``parse(name, data)``, once per distinct file (keyed by its bytes' SHA-256): a rerun reuses the question set,
    or raises the same refusal again, without parsing the file anew."""
    key = (name, hashlib.sha256(data).hexdigest())
    memo = st.session_state.get(PARSED_KEY)
    if memo is None or memo[0] != key:
        try:
            memo = (key, parse(name, data))
        except Exception as e:  # kept to be raised again; without tracebacks, whose frames hold the file's bytes
            cause: BaseException | None = e
            seen: set[int] = set()
            while cause is not None and id(cause) not in seen:
                seen.add(id(cause))
                cause.__traceback__ = None
                cause = cause.__cause__ or cause.__context__
            memo = (key, e)
        st.session_state[PARSED_KEY] = memo
    if isinstance(memo[1], Exception):
        raise memo[1]
    return memo[1]


def pick_question_set():
    from rag_core.evaluation.questions import load_golden, parse_upload

    source = st.radio("Question set", SOURCES, horizontal=True, key=SOURCE_KEY, persist_state=KEEP)
    if source == SOURCES[0]:
        return state.guarded(load_golden, "Golden question set")
    if source == SOURCES[1]:
        st.caption("Columns/fields: `question` and `answer_text` (or `answer_texts`, a JSON list or `a|b`), or "
                   "`evidence` (places: `file`, `heading_path`, verbatim `spans`, one of which must be retrieved: "
                   "gold that does not depend on chunking; several places: a multi-part question, complete when "
                   "all are retrieved), and/or `doc` + `heading`; optional `id`, `intent` (fact, code, procedure, "
                   "data, multi) and `type` (e.g. comparison, bridge; `null` with `evidence: []` for a question the "
                   "documents do not answer).")
        # An uploader cannot be given its file back after a visit to another page: the parsed set is kept instead,
        # until the user uploads another file or removes this one.
        upload = st.file_uploader("Question file", type=["csv", "jsonl", "json"], key="eval_upload",
                                  on_change=lambda: st.session_state.pop(UPLOADED_KEY, None))
        if upload is None:
            name, kept = st.session_state.get(UPLOADED_KEY, (None, None))
            if kept is not None:
                st.caption(f"Using **{md_escape(name)}**, uploaded earlier in this session; upload another file "
                           "to replace it.")
            return kept
        parsed = state.guarded(lambda: _parse_once(parse_upload, upload.name, upload.getvalue()), "Question file")
        if parsed is not None:
            st.session_state[UPLOADED_KEY] = (upload.name, parsed)
        return parsed
    if source == SOURCES[3]:  # sets saved from a reviewed draft (ui/evaluate/draft_view.py)
        from ui.evaluate import draft_view

        return draft_view.pick_saved_set()
    path = st.text_input("BEIR folder (corpus.jsonl, queries.jsonl, qrels/)", key="eval_beir_path",
                         placeholder="../shared/datasets/scifact", persist_state=KEEP)
    split = st.text_input("qrels split", "test", key="eval_beir_split", persist_state=KEEP)
    if not path.strip():
        return None
    return state.guarded(lambda: beir_folder(path.strip(), split).question_set(), "BEIR folder")


def pick_configs(label: str, key: str, multi: bool = True) -> list[RAGConfig]:
    saved = state.guarded(state.config_store().list, "Saved configurations") or []
    options = [ACTIVE, *saved]
    names = st.multiselect(label, options, default=[ACTIVE], key=key, persist_state=KEEP) if multi else [
        st.selectbox(label, options, key=key, persist_state=KEEP)]
    configs = []
    for name in names:
        config = state.active_config() if name == ACTIVE else state.guarded(
            lambda n=name: state.config_store().load(n), f"Configuration '{name}'")
        if config is not None and config.name not in {c.name for c in configs}:
            configs.append(config)
    return configs


DEMO_STRATEGIES = ("vector", "keyword", "hybrid", "agent")
LEADERBOARD_KEY = "eval_open_results"  # the guided demo opened this page on the leaderboard (kept for the session)


def show_run(run, store: ResultsStore) -> None:
    if run.status != "complete":
        st.warning(f"This run is **{md_escape(run.status)}**: {md_inert(run.note)}")
    if not run.records:  # cancelled before its first question: nothing to chart
        st.info("This run measured no question.")
        return
    shown = runs.run_labels(run)  # configuration name → label that tells apart settings saved under one name
    baseline_banner([{**r, "config": shown.get(r["config"], r["config"])} for r in store.below_baseline(run)])
    # A metric only some strategies have (steps, "said not found": the agent's) is a dash, not "None", elsewhere.
    st.dataframe(runs.chart("leaderboard", run), hide_index=True, width="stretch", placeholder="–", column_config={
        name: st.column_config.NumberColumn(help=text) for name, text in METRIC_HELP.items()})
    saved = {k: v for k, v in store.baselines().items() if k.startswith(f"{run.question_set['name']}|")}
    if saved:
        st.caption("Baselines on this question set: " + md_inert("; ".join(
            f"{key.split('|', 1)[1].replace('|', ' · ')} (run {value['run_id']})" for key, value in saved.items())))
    rows = {f"{shown.get(r['config'], r['config'])} · {r['strategy']}": (r["config"], r["strategy"])
            for r in run.summary}
    c1, c2 = st.columns([3, 1])
    chosen = c1.selectbox("Keep as baseline", list(rows), key="eval_baseline_row", persist_state=KEEP)
    if c2.button("Save baseline", disabled=run.status != "complete") and chosen in rows:
        config, strategy = rows[chosen]
        if state.guarded(lambda: store.set_baseline(run, config, strategy), "Baseline"):
            st.success(md_inert(f"Baseline saved for {chosen} on '{run.question_set['name']}'."))
    left, right = st.columns(2)
    kind = left.radio("Metric vs k", ["hit", "recall"], horizontal=True, key="eval_vs_k", persist_state=KEEP)
    left.plotly_chart(runs.chart("metric_vs_k", run, kind), width="stretch")
    right.plotly_chart(runs.chart("tokens_vs_recall", run), width="stretch")
    by = "type" if any(r.get("type") for r in run.records) else "intent"  # multi-part sets: per question type
    metric = st.selectbox(f"Per-{by} metric", BREAKDOWN_METRICS, index=BREAKDOWN_METRICS.index("hit@5"),
                          key="eval_im", persist_state=KEEP, help=" ".join(f"{k}: {v}" for k, v in METRIC_HELP.items()))
    st.plotly_chart(runs.chart("per_intent_bars", run, metric, by), width="stretch")
    drill_down(run, metric, shown)


def _below(rows: list[dict]) -> list[str]:
    """One line per configuration × strategy: its metrics below the baseline, each with the test's p-value."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for row in rows:
        groups.setdefault((row["config"], row["strategy"]), []).append(row)
    lines = []
    for (config, strategy), group in groups.items():
        unpaired = group[0]["p_value"] is None
        how = f"{group[0]['questions']} questions" + (
            f"; no per-question baseline scores, so a drop beyond {Z} standard errors" if unpaired else "")
        metrics = ", ".join(f"{r['metric']} {r['current']:.3f} < {r['baseline']:.3f}"
                            + ("" if r["p_value"] is None else f" (p = {r['p_value']:.2g})") for r in group)
        lines.append(md_inert(f"{config} · {strategy} ({how}): {metrics}"))
    return lines


def baseline_banner(compared: list[dict]) -> None:
    """A regression banner for drops beyond noise, and a quiet line for the dips within it."""
    regressions = [r for r in compared if r["regression"]]
    if regressions:
        st.error("**Regression against the saved baseline**: a drop of at least "
                 f"{MIN_DROP} that a one-sided paired sign-flip test over the questions both runs scored finds "
                 f"unlikely to be chance (p < {ALPHA}).\n\n" + "\n".join(f"- {line}" for line in _below(regressions)),
                 icon=":material/trending_down:")
    noise = [r for r in compared if not r["regression"]]
    if noise:
        st.caption(f"Below the saved baseline within noise (a drop under {MIN_DROP}, or p ≥ {ALPHA}): "
                   + "; ".join(_below(noise)))


def drill_down(run, metric: str, shown: dict[str, str]) -> None:
    st.subheader("Per question")
    table = runs.chart("questions_table", run, metric)
    st.dataframe(table, hide_index=True, width="stretch")
    labels = {f"{row.id} · {row.question[:80]}": row.id for row in table.itertuples()}
    picked = st.selectbox("Open a question's retrieval trace", list(labels), key="eval_drill")
    for record in (r for r in run.records if picked and r["question_id"] == labels[picked]):
        found = sum(h["found"] for h in record["hits"])
        score = record["metrics"].get(metric)
        with st.expander(md_inert(f"{shown.get(record['config'], record['config'])} · {record['strategy']} — {metric} "
                                   f"{'–' if score is None else f'{score:.2f}'} · {found} answer hit(s) · "
                                   f"{record['context_tokens']} tokens · {record['steps']} steps")):
            if record.get("error"):
                st.error(md_inert(record["error"]))
            cited = record["metrics"].get("cited")
            grounded = "grounded" if record["metrics"].get("grounded") else "UNGROUNDED"
            answer_score = "" if cited is None else f" · gold evidence cited {cited:.0%} · {grounded}"
            said = [record["metrics"][m] for m in NOT_FOUND_METRICS if m in record["metrics"]]
            if said:
                answer_score += " · said NOT FOUND" if said[0] else " · answered"
            st.caption(md_inert(f"route: {record.get('route') or '—'} · {record['latency_ms']:.0f} ms{answer_score}"))
            if record["hits"]:
                st.dataframe(record["hits"], hide_index=True, width="stretch")
            if record.get("answer"):
                st.text(record["answer"])
            st.json(record.get("trace") or {}, expanded=False)


def run_tab(question_set) -> None:
    """Pick configurations and strategies, start an evaluation job, follow it."""
    configs = pick_configs("Configurations", "eval_configs")
    strategies = st.multiselect("Strategies", list(STRATEGIES), default=["vector", "keyword", "hybrid", "agent"],
                                key="eval_strategies", persist_state=KEEP)
    ready = bool(question_set and configs and strategies)
    if st.button("Run evaluation", type="primary", disabled=not ready,
                 help="Runs as a background job: follow it here or in the sidebar of any page; Cancel keeps what "
                      "was measured."):
        eval_jobs.start(question_set, configs, strategies)
    eval_jobs.panel(("evaluation",))


def results_tab(question_set, leaderboard_now: bool) -> None:
    """The stored runs: pick one, see its leaderboard, charts and drill-down (the guided demo's step 4 starts a run
    here when there is none)."""
    store = state.results_store()
    stored = runs.list_runs()
    no_run = not any(r["label"] != "sweep" for r in stored)
    if leaderboard_now and question_set and no_run and eval_jobs.running() is None:
        eval_jobs.start(question_set, [state.active_config()], list(DEMO_STRATEGIES))
    if no_run and eval_jobs.running() is not None:
        st.info("No evaluation finished yet: one is running now — the leaderboard appears here when it ends.")
        eval_jobs.panel(("evaluation",), where="results")
    elif not stored:
        st.info("No evaluation has been run yet: pick a question set and press **Run evaluation**.")
    if stored:
        labels = {f"{r['created'][:19]} · {r['question_set']} · {', '.join(runs.row_labels(r))} · {r['status']}"
                  f"{' · ' + r['label'] if r['label'] else ''} · {r['id']}": r["id"] for r in stored}
        ids = list(labels.values())
        current = st.session_state.get(RUN_KEY)
        if current not in ids:  # newest run that is not a sweep (sweeps have their own tab)
            current = next((r["id"] for r in stored if r["label"] != "sweep"), ids[0])
        picked = st.selectbox("Run", list(labels), index=ids.index(current))
        st.session_state[RUN_KEY] = labels[picked]  # the run shown comes back after a visit to another page
        run = state.guarded(lambda: runs.load_run(labels[picked]), "Stored run")
        if run:
            show_run(run, store)
        if st.button("Delete this run", key="eval_delete_run"):  # also when the stored run is unreadable
            state.guarded(lambda: store.delete(labels[picked]), "Deleting the run")
            st.session_state.pop(RUN_KEY, None)
            st.rerun()


def sweep_tab(question_set) -> None:
    """A grid over max tokens × k × strategies as one job, and its heatmaps."""
    base = pick_configs("Base configuration", "eval_sweep_base", multi=False)
    c1, c2, c3 = st.columns(3)
    max_tokens = c1.multiselect("Max tokens", [128, 256, 384, 512, 768, 1024], default=[256, 512], key="eval_sw_mt",
                                persist_state=KEEP)
    ks = c2.multiselect("k (initial)", [1, 3, 5, 10, 20], default=[3, 5, 10], key="eval_sw_k", persist_state=KEEP)
    sweep_strategies = c3.multiselect("Strategies", list(STRATEGIES), default=["hybrid"], key="eval_sw_s",
                                      persist_state=KEEP)
    sweep_metric = st.selectbox("Metric", QUALITY_METRICS, index=QUALITY_METRICS.index("recall@5"), key="eval_sw_m",
                                persist_state=KEEP)
    if st.button("Run sweep", disabled=not (question_set and base and max_tokens and ks and sweep_strategies)):
        from rag_core.evaluation.sweep import sweep_configs

        grid_configs = state.guarded(lambda: sweep_configs(base[0], max_tokens, ks), "Sweep")
        if grid_configs:
            eval_jobs.start(question_set, grid_configs, sweep_strategies, label="sweep")
    eval_jobs.panel(("sweep",))
    sweep_id = st.session_state.get(SWEEP_KEY) or next((r["id"] for r in runs.list_runs() if r["label"] == "sweep"),
                                                       None)
    sweep_run = state.guarded(lambda: runs.load_run(sweep_id), "Stored sweep") if sweep_id else None
    if sweep_run:
        from rag_core.evaluation.sweep import sweep_grid

        st.caption(md_inert(f"Sweep {sweep_run.id} on '{sweep_run.question_set['name']}' ({sweep_run.status})"))
        grid = state.guarded(lambda: sweep_grid(sweep_run, sweep_metric), "Sweep")  # an older run lacks new metrics
        for strategy in sweep_run.strategies if grid else []:
            st.plotly_chart(charts.sweep_heatmap(grid, sweep_metric, strategy), width="stretch")
