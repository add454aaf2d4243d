package storagetest

import (
	"context"

	"github.com/hookline/hookline/storage"
)

// RekeyBatch implements storage.Store.
func (f *Faulty) RekeyBatch(ctx context.Context, k *storage.Keyring, cursor string, n int) (storage.RekeyStep, error) {
	return call(f, ctx, MethodRekeyBatch, func() (storage.RekeyStep, error) { return f.inner.RekeyBatch(ctx, k, cursor, n) })
}

// RekeyState implements storage.Store.
func (f *Faulty) RekeyState(ctx context.Context) (storage.RekeyProgress, error) {
	return call(f, ctx, MethodRekeyState, func() (storage.RekeyProgress, error) { return f.inner.RekeyState(ctx) })
}

// SaveRekeyState implements storage.Store.
func (f *Faulty) SaveRekeyState(ctx context.Context, p storage.RekeyProgress) error {
	return call0(f, ctx, MethodSaveRekey, func() error { return f.inner.SaveRekeyState(ctx, p) })
}
