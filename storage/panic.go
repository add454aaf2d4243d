package storage

import (
	"fmt"
	"runtime/debug"
)

// PanicError is a panic recovered inside a backend's shared machinery (a
// group commit, a batch of Redis round trips): the operations of that
// batch fail with it instead of the panic taking the whole process down.
// It wraps ErrUnavailable, so the ingress answers 503 and the provider
// retries.
type PanicError struct {
	// Value is what was passed to panic.
	Value any
	// Stack is the stack of the goroutine that panicked, for logs.
	Stack []byte
}

// Recovered turns the value returned by recover into a *PanicError; call it
// in the deferred function that recovered, so that Stack shows the panic.
func Recovered(v any) *PanicError {
	return &PanicError{Value: v, Stack: debug.Stack()}
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("%v: panic in a batched store operation: %v", ErrUnavailable, e.Value)
}

// Unwrap makes errors.Is(err, ErrUnavailable) hold.
func (e *PanicError) Unwrap() error { return ErrUnavailable }
