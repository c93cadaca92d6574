package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// signalCause is why interruptContext's context ended: the signal that
// arrived.
type signalCause struct{ sig syscall.Signal }

func (s signalCause) Error() string { return "received " + s.sig.String() }

// interruptContext is cancelled by the first SIGINT or SIGTERM (a batch
// scheduler's stop is handled like Ctrl-C: checkpoint, then exit); a second
// one exits the process at once.
func interruptContext() (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		s, ok := <-ch
		if !ok {
			return
		}
		sig, _ := s.(syscall.Signal)
		fmt.Fprintf(os.Stderr, "\n%v: finishing the current step's checkpoint (Ctrl-C again to quit now)\n", sig)
		cancel(signalCause{sig})
		if _, ok := <-ch; ok {
			os.Exit(128 + int(sig))
		}
	}()
	return ctx, func() { signal.Stop(ch); close(ch); cancel(nil) }
}

// exitError carries a command's exit status other than 1 to runMain.
type exitError struct {
	err  error
	code int
}

func (e exitError) Error() string { return e.err.Error() }
func (e exitError) Unwrap() error { return e.err }

// interruptedExit is the exit of a run stopped by a signal after its
// checkpoint was written: the shell's 128 + signal number (130 for Ctrl-C,
// 143 for SIGTERM), so a script does not go on as if training finished.
func interruptedExit(ctx context.Context, err error) error {
	code := 130
	var sc signalCause
	if errors.As(context.Cause(ctx), &sc) {
		code = 128 + int(sc.sig)
	}
	return exitError{err: err, code: code}
}
