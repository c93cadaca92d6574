// Package sandbox runs model-written code: Debian's python3 (and one-shot
// commands) under bubblewrap, with resource limits, behind a pool of warm,
// stateful interpreters.
//
// It owns isolation and limits: every sandbox unshares all namespaces (user,
// pid, net, ipc, uts, cgroup; no nested user namespaces), sees /usr and a few
// files of /etc read-only, a private size-limited tmpfs as its work dir and
// /tmp, and an environment of PATH, HOME, LANG and thread-count variables
// only. Inside it, prlimit(1) sets rlimits on the model's code before it
// starts (CPU seconds, address space, file size, open files, processes, no
// core files); where the machine delegates cgroup v2 memory and pids
// controllers, each sandbox also gets its own cgroup. Go enforces a
// wall-clock timeout per cell or command and caps captured output.
//
// It never knows about RL: no prompts, rewards, episodes or tool schemas. An
// environment maps "episode" to one [Interpreter] ([Pool.Acquire] when the
// episode starts, [Pool.Release] when it ends) and a custom tool to
// [RunCommand].
//
// # Semantics next to verifiers
//
// verifiers (commit 8d4b33247, verifiers/envs/python_env.py) runs one
// long-lived REPL worker per rollout inside a remote container (python:3.11-slim
// with numpy, sympy and scipy pip-installed at start), fed code over FIFOs; a
// cell's trailing expression is shown as "Out[n]: repr", stdout and stderr
// are captured with contextlib redirection, and a command that runs past its
// timeout (60 s in math_python) returns "Error: Command timed out" while the
// worker keeps running. Here one interpreter also lives for one episode and
// keeps its namespace between calls, so variables, imports and side effects
// of earlier cells happen once, as there. Where the two differ:
//
//   - Output is captured at the file-descriptor level, so os.write(1, ...),
//     C extensions and child processes are captured too; verifiers' redirection
//     sees only Python-level writes.
//   - A cell that runs past Config.Timeout kills its interpreter: the result
//     says so, and the episode's next call runs in a fresh interpreter with
//     Result.Restarted set (variables from earlier calls are gone — nothing is
//     replayed, because replaying would repeat side effects and could time out
//     again). verifiers leaves the stuck worker running, so its next call waits
//     behind it.
//   - An interpreter is never reused across episodes: Release kills it and the
//     pool starts a fresh one in the background.
//   - Packages are Debian's python3-numpy, python3-sympy and python3-scipy;
//     nothing is pip-installed and there is no network.
//   - SystemExit (exit(), sys.exit()) is reported as the cell's error and the
//     interpreter lives on; in verifiers it ends the worker.
//
// # Where bubblewrap cannot run
//
// If bwrap cannot create namespaces (some containers), [NewPool] and
// [RunCommand] refuse with one line saying how to allow it. Setting
// GRPO_SANDBOX=unsafe-no-isolation runs model code with rlimits and a cleared
// environment but no namespaces, and logs a warning once per process.
package sandbox
