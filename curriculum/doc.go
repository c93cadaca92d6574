// Package curriculum decides which examples a training run draws and
// which groups it trains on. The Schedule splits each step's examples
// across the environments by weight and walks each train split in an
// order reshuffled every epoch. From how the policy did on them come the
// difficulty pools of Lab's [buffer] and prime-rl's orchestrator buffer
// (an example whose group's mean reward crosses the easy or hard threshold
// is set aside and no longer drawn; a fraction returns when the run
// resumes) and online difficulty filtering (a group whose rollouts all
// failed or all succeeded teaches nothing and is replaced). Its state is
// small and checkpointed with the run. It knows nothing of models or
// environments: examples are indices into each environment's train
// split.
package curriculum
