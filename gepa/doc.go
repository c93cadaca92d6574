// Package gepa owns GEPA prompt optimisation (Genetic-Pareto reflective
// prompt evolution, Agrawal et al. 2025): a pool of candidate system
// prompts with their lineage, the per-validation-instance Pareto fronts,
// parent selection among the non-dominated candidates weighted by the
// fronts they sit on, reflective mutation (a teacher reads the student's
// traces on a minibatch and writes a new instruction), acceptance on the
// minibatch then full validation, an optional merge of two non-dominated
// candidates, the budget of metric calls, and the run's state and output
// files (system_prompt.txt, results.jsonl, pareto_frontier.jsonl,
// metadata.json, best_score.png), saved atomically each iteration so a
// killed run resumes where it stopped.
//
// The student (whose prompt is optimised) and the teacher (who proposes
// prompts) are interfaces: EnvStudent plays an environment's examples on a
// rollout.Engine (a model loaded in process, or an endpoint) and scores
// them with its rubric; EngineTeacher asks a model through an Engine.
// Tests plug in deterministic Go functions. Drawing progress is the
// caller's (Options.OnIteration); this package prints nothing.
package gepa
