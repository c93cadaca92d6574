package env

import "errors"

// ErrFatal is wrapped by an Episode's Respond error when the environment
// can serve no more episodes (its Python process died too often, say):
// playing on would only fail every episode, so the run stops with it.
var ErrFatal = errors.New("the environment can serve no more episodes")

// Fatal marks err as ErrFatal while keeping its own message.
func Fatal(err error) error { return fatalError{err} }

type fatalError struct{ err error }

func (e fatalError) Error() string        { return e.err.Error() }
func (e fatalError) Unwrap() error        { return e.err }
func (e fatalError) Is(target error) bool { return target == ErrFatal }
