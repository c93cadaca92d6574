#!/usr/bin/env python3
"""grpo against eager PyTorch on this CPU, fairly: scripts/bench.sh runs this.

Per round (ROUNDS, default 3; each run one warm-up, then the best of
REPEAT, default 1, so each figure is a best of ROUNDS × REPEAT), interleaved so that background load hits
both engines alike:
  grpo     `grpo bench` (per-op figures) and `grpo bench --grpo-step`
           (whole GRPO step) at grpo's defaults: GOMAXPROCS, OMP_NUM_THREADS
           and OPENBLAS_NUM_THREADS unset (GOMAXPROCS = nproc; the CPU
           backend runs OpenBLAS single-threaded under its own goroutines)
  PyTorch  scripts/bench_torch.py (per-op) and scripts/grpo_step_torch.py
           (whole step) once per thread setting: torch.set_num_threads(t)
           with OMP_NUM_THREADS=t, and OPENBLAS_NUM_THREADS=b for the pool
           Debian's libopenblas0-pthread keeps besides torch's OpenMP
           threads (t and b over 1..nproc; on more than 4 cores, powers of
           two and nproc). Each figure keeps PyTorch's best over every
           setting and round, and says which setting gave it.
OPENBLAS_CORETYPE is never changed; it is reported when set. A step run
whose warm-up step takes more than 3× the best step so far stops there
(its warm-up time is its figure, marked †). Settings that
are more than PRUNE (default 1.5) times slower than the best on every
figure in round 1 are not run again (PRUNE=0 keeps all): they cannot
become the best, and the run stays within 10 minutes on 2 cores.

Prints Markdown ready for BENCHMARKS.md on stdout; progress on stderr;
each run's JSON under $BENCH_OUT (default /tmp/grpo-bench).

    scripts/bench.sh [SHAPE]            # default qwen3-30m
    ROUNDS=5 PRUNE=0 scripts/bench.sh   # more rounds, every setting every round
    QUICK=1 ROUNDS=1 scripts/bench.sh   # a minute's check of the scripts (figures meaningless)
    REPORT_ONLY=1 scripts/bench.sh      # the tables again from the last run's JSON
"""

import json
import os
import platform
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = "/usr/bin/python3"  # Debian's python3-torch; a pyenv python3 on PATH may lack torch

# The per-op figures: (label, grpo result name prefix, torch JSON key(s), unit).
OPS = [
    ("prefill 1×512 (logits at every position)", "prefill", ("prefill_tokens_per_s",), "tok/s"),
    ("decode batch 1, 512-token context", "decode", ("decode_tokens_per_s",), "tok/s"),
    ("LoRA train step 4×256, r16, all projections", "lora train", ("train_tokens_per_s",), "tok/s"),
    ("matmul 512×512×512", "matmul 512x512x512", ("matmul_gflops", "512x512x512"), "GFLOP/s"),
    ("matmul 512×2048×512", "matmul 512x2048x512", ("matmul_gflops", "512x2048x512"), "GFLOP/s"),
]
PHASES = [("generate", "generate_s"), ("train", "train_s"), ("whole step", "step_s")]


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def run_json(cmd, env, path):
    t0 = time.time()
    p = subprocess.run(cmd, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.exit(f"bench: {' '.join(cmd)} failed ({p.returncode}):\n{p.stderr}")
    with open(path, "w") as f:
        f.write(p.stdout)
    log(f"  {time.time() - t0:5.1f} s  {os.path.basename(path)}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def thread_values(n):
    if n <= 4:
        return list(range(1, n + 1))
    v, t = [], 1
    while t < n:
        v.append(t)
        t *= 2
    return v + [n]


def main():
    shape = sys.argv[1] if len(sys.argv) > 1 else "qwen3-30m"
    rounds = int(os.environ.get("ROUNDS", "3"))
    prune = float(os.environ.get("PRUNE", "1.5"))
    repeat = os.environ.get("REPEAT", "1")  # measured runs per process after its warm-up
    out = os.environ.get("BENCH_OUT", "/tmp/grpo-bench")
    os.makedirs(out, exist_ok=True)
    nproc = os.cpu_count()
    try:
        nproc = len(os.sched_getaffinity(0))
    except AttributeError:
        pass
    settings = [(t, b) for t in thread_values(nproc) for b in thread_values(nproc)]
    base_env = dict(os.environ)
    for k in ("GOMAXPROCS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        base_env.pop(k, None)
    grpo_env = dict(base_env)

    def torch_env(t, b):
        e = dict(base_env)
        e["OMP_NUM_THREADS"], e["OPENBLAS_NUM_THREADS"] = str(t), str(b)
        return e

    grpo_ops_cmd = ["bin/grpo", "bench", "--shape", shape, "--json", "--decode", "16", "--repeat", repeat,
                    "--prefill-logits", "all", "--dtype", "f32"]
    grpo_step_cmd = ["bin/grpo", "bench", "--shape", shape, "--json", "--grpo-step", "--repeat", repeat, "--dtype", "f32"]

    def torch_ops_cmd(t):
        return [PY, "scripts/bench_torch.py", "--preset", shape, "--threads", str(t), "--decode", "16", "--repeats", repeat] + quick_torch_ops

    def torch_step_cmd(t):
        cmd = [PY, "scripts/grpo_step_torch.py", "--preset", shape, "--threads", str(t), "--repeats", repeat] + quick_torch_step
        measured = [x["step_s"] for runs in t_step.values() for x in runs if not x.get("gave_up")]
        # A setting whose warm-up step takes three times the best step so far
        # cannot be the best: do not spend minutes on it. (Three, not less: a
        # load spike on a shared machine can double one step.)
        if measured:
            cmd += ["--give-up", f"{3 * min(measured):.3f}"]
        return cmd

    # QUICK=1: the same runs on a fraction of the work, to check the
    # scripts in a minute; its figures mean nothing.
    quick_torch_ops = quick_torch_step = []
    if os.environ.get("QUICK") == "1":
        grpo_ops_cmd += ["--prefill", "32", "--decode", "2", "--train-seqs", "1", "--train-len", "16"]
        grpo_step_cmd += ["--step-prompts", "1", "--step-rollouts", "2", "--step-tokens", "4"]
        quick_torch_ops = ["--prefill", "32", "--decode", "2", "--train-seqs", "1", "--train-len", "16"]
        quick_torch_step = ["--prompts", "1", "--rollouts", "2", "--new-tokens", "4"]

    load0 = os.getloadavg()
    t_start = time.time()
    g_ops, g_step, g_alone = [], [], []  # g_alone: --step-no-prefix-sharing
    t_ops = {s: [] for s in settings}
    t_step = {s: [] for s in settings}
    active = list(settings)
    if os.environ.get("REPORT_ONLY") == "1":  # re-render the tables from a finished run's JSON under $BENCH_OUT
        load0 = None

        def load(name):
            with open(f"{out}/{name}") as f:
                return json.loads(f.read().strip().splitlines()[-1])
        for r in range(1, rounds + 1):
            g_ops.append(load(f"grpo-ops.{r}.json"))
            g_step.append(load(f"grpo-step.{r}.json"))
            if os.path.exists(f"{out}/grpo-step-alone.{r}.json"):
                g_alone.append(load(f"grpo-step-alone.{r}.json"))
            for t, b in settings:
                if os.path.exists(f"{out}/torch-ops.t{t}b{b}.{r}.json"):
                    t_ops[(t, b)].append(load(f"torch-ops.t{t}b{b}.{r}.json"))
                    t_step[(t, b)].append(load(f"torch-step.t{t}b{b}.{r}.json"))
        rounds = 0  # nothing to run
    for r in range(1, rounds + 1):
        log(f"round {r}/{rounds}: grpo, then PyTorch at (torch threads, OpenBLAS threads) {active}")
        g_ops.append(run_json(grpo_ops_cmd, grpo_env, f"{out}/grpo-ops.{r}.json"))
        g_step.append(run_json(grpo_step_cmd, grpo_env, f"{out}/grpo-step.{r}.json"))
        g_alone.append(run_json(grpo_step_cmd + ["--step-no-prefix-sharing"], grpo_env, f"{out}/grpo-step-alone.{r}.json"))
        order = active if r % 2 else active[::-1]  # alternate, so drift does not favour one setting
        for t, b in order:
            t_ops[(t, b)].append(run_json(torch_ops_cmd(t), torch_env(t, b), f"{out}/torch-ops.t{t}b{b}.{r}.json"))
            t_step[(t, b)].append(run_json(torch_step_cmd(t), torch_env(t, b), f"{out}/torch-step.t{t}b{b}.{r}.json"))
        if r == 1 and prune > 0 and len(active) > 1:
            active = keep_settings(active, t_ops, t_step, prune)
    load1 = os.getloadavg()
    elapsed = time.time() - t_start
    rounds = len(g_ops)

    want = g_step[0]["gen_tokens"]
    for g in g_step + g_alone:
        if g["gen_tokens"] != want or g["train_tokens"] != want:
            sys.exit(f"bench: grpo generated {g['gen_tokens']} and trained {g['train_tokens']} tokens, want {want} each")
    for s in settings:
        for x in t_step[s]:
            if x["gen_tokens"] != want:
                sys.exit(f"bench: PyTorch generated {x['gen_tokens']} tokens per step, grpo {want}: not the same work")

    print(report(shape, settings, g_ops, g_step, g_alone, t_ops, t_step, rounds, nproc, load0, load1, elapsed))


def repeats_of(run):
    return run.get("repeats", "?")


def op_value(run, key):
    v = run
    for k in key:
        v = v[k]
    return v


def gbest_op(runs, prefix):
    return max(next(x["value"] for x in run["results"] if x["name"].startswith(prefix)) for run in runs)


def keep_settings(active, t_ops, t_step, factor):
    """The settings within factor of the best on at least one figure."""
    best_op = {lab: max(op_value(t_ops[s][0], key) for s in active) for lab, _, key, _ in OPS}
    best_ph = {k: min(t_step[s][0][k] for s in active) for _, k in PHASES}
    keep = []
    for s in active:
        near = any(op_value(t_ops[s][0], key) * factor >= best_op[lab] for lab, _, key, _ in OPS)
        near = near or any(t_step[s][0][k] <= factor * best_ph[k] for _, k in PHASES)
        if near:
            keep.append(s)
        else:
            log(f"  setting {s}: more than {factor}× slower than the best on every figure; not run again")
    return keep


def fmt_setting(s):
    return f"t{s[0]}/b{s[1]}"


def report(shape, settings, g_ops, g_step, g_alone, t_ops, t_step, rounds, nproc, load0, load1, elapsed):
    cpu = platform.processor() or "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    tb = t_ops[settings[0]][0].get("blas") or {}
    lines = []
    lines.append(f"Model `{shape}` ({g_ops[0]['params'] / 1e6:.1f}M parameters), float32, random weights; "
                 f"{cpu}, {nproc} cores; PyTorch {t_ops[settings[0]][0]['torch']} eager. "
                 f"Best of {rounds} interleaved rounds (each run: one warm-up, then the best of {repeats_of(g_step[0])}). "
                 + (f"Load average {load0[0]:.1f} at the start, {load1[0]:.1f} at the end; {elapsed / 60:.1f} minutes."
                    if load0 else "(Re-rendered from saved JSON.)"))
    lines.append("")
    lines.append(f"- grpo: default settings (GOMAXPROCS = {g_ops[0]['threads']}); {g_step[0].get('blas', '?')}")
    lines.append(f"- PyTorch: OpenBLAS {tb.get('library', '?')}, core {tb.get('core', '?')}; "
                 "settings tN/bM = torch.set_num_threads(N) with OMP_NUM_THREADS=N, OPENBLAS_NUM_THREADS=M")
    ct = os.environ.get("OPENBLAS_CORETYPE")
    lines.append(f"- OPENBLAS_CORETYPE: {'`' + ct + '` (set in the environment; left as it is)' if ct else 'not set'}")
    lines.append("")

    # Every PyTorch setting, so the choice of the best is visible.
    lines.append("PyTorch at each thread setting (best over the rounds it ran; throughput, step in seconds):")
    lines.append("")
    head = [lab.split(" (")[0] for lab, _, _, _ in OPS] + [f"step {n} (s)" for n, _ in PHASES]
    lines.append("| setting | " + " | ".join(head) + " |")
    lines.append("|---|" + "---:|" * len(head))
    for s in settings:
        cells = [f"{max(op_value(r, key) for r in t_ops[s]):.1f}" for _, _, key, _ in OPS]
        for _, k in PHASES:  # †: the best of this setting is a warm-up-only figure
            r = min(t_step[s], key=lambda r: r[k])
            cells.append(f"{r[k]:.2f}" + (" †" if r.get("gave_up") else ""))
        lines.append(f"| {fmt_setting(s)} ({len(t_ops[s])} rounds) | " + " | ".join(cells) + " |")
    lines.append("")
    if any(r.get("gave_up") for runs in t_step.values() for r in runs):
        lines.append("(†: from a run stopped after its warm-up step, which alone took more than 3× the best step so far; the "
                     "warm-up includes first-call costs, so the figure overstates that setting's step, but by 3× it cannot be the best.)")
        lines.append("")

    lines.append("Per-op figures (throughput; above 1 grpo is faster):")
    lines.append("")
    lines.append("| figure | grpo | PyTorch, best setting | grpo / PyTorch |")
    lines.append("|---|---:|---:|---:|")
    for lab, prefix, key, unit in OPS:
        g = gbest_op(g_ops, prefix)
        s, t = max(((s, max(op_value(r, key) for r in t_ops[s])) for s in settings), key=lambda x: x[1])
        lines.append(f"| {lab} | {g:.1f} {unit} | {t:.1f} {unit} ({fmt_setting(s)}) | **{g / t:.2f}** |")
    lines.append("")

    st = g_step[0]
    lines.append(f"Whole GRPO step ({st['prompts']} prompts × {st['rollouts']} rollouts × {st['new_tokens']} new tokens "
                 f"after {st['prompt_len']}-token prompts, LoRA r{st['lora_rank']} on all seven projections, AdamW; "
                 "seconds, each phase its own best; below 1 grpo is faster, the bar is ≤ 0.67):")
    lines.append("")
    lines.append("| phase | grpo (s) | PyTorch, best setting (s) | grpo / PyTorch (time) "
                 "| grpo, every rollout its own prompt (s) | that / PyTorch |")
    lines.append("|---|---:|---:|---:|---:|---:|")
    for name, k in PHASES:
        g = min(r[k] for r in g_step)
        s, t = min(((s, min(r[k] for r in t_step[s])) for s in settings), key=lambda x: x[1])
        bold = "**" if k == "step_s" else ""
        alone = f"{min(r[k] for r in g_alone):.2f} | {min(r[k] for r in g_alone) / t:.2f}" if g_alone else "– | –"
        lines.append(f"| {name} | {g:.2f} | {t:.2f} ({fmt_setting(s)}) | {bold}{g / t:.2f}{bold} | {alone} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
