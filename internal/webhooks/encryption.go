package webhooks

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/operator"
	"github.com/hookline/hookline/storage"
)

// Encryption at rest: the keys of the encryption_key option, the
// storage.SealingStore the app hands out over its pooled store, and the
// rekey the operator API starts (POST /webhooks/rekey).

// provisionEncryption replaces the placeholders of EncryptionKeys ({env.*},
// {file.*}) and builds the keyring. The config keeps the placeholders: the
// keys themselves live only in the keyring, and no error shows one.
func (a *App) provisionEncryption() error {
	a.rekey = newTasks[storage.RekeyProgress](1, nil)
	a.sealed = new(atomic.Pointer[storage.SealingStore])
	if len(a.EncryptionKeys) == 0 {
		return nil
	}
	repl := caddy.NewReplacer()
	keys := make([]string, len(a.EncryptionKeys))
	for i, k := range a.EncryptionKeys {
		if !strings.Contains(k, "{") {
			a.log.Warn("an encryption_key is written in the config itself: give it as a placeholder ({env.*}, {file.*}) to keep it out of the JSON config",
				zap.Int("key", i+1))
		}
		keys[i] = strings.TrimSpace(repl.ReplaceAll(k, ""))
		if keys[i] == "" {
			return fmt.Errorf("encryption_key: key %d is empty (after placeholder replacement)", i+1)
		}
	}
	kr, err := storage.ParseKeys(keys)
	if err != nil {
		return fmt.Errorf("encryption_key: %v", err)
	}
	a.keys = kr
	return nil
}

// sealing is st under the app's SealingStore, made once per store. Every
// store the app hands out is one, with keys or not: without keys it
// stores in clear, and a record sealed before is dead-lettered by Lease
// (its key missing) rather than handed out sealed.
func (a *App) sealing(st storage.Store) storage.Store {
	if s := a.sealed.Load(); s != nil && s.Unwrap() == st {
		return s
	}
	s := storage.NewSealingStore(st, a.keys)
	s.OnDead(func(job *storage.Job, reason string) { // counted and audited as any dead delivery
		a.onResult(delivery.Report{Job: job, Result: storage.Dead, Error: reason})
	})
	a.sealed.Store(s)
	return s
}

// Encryption says whether payloads are sealed at rest, and under which
// key (by id: never the key).
func (a *App) Encryption() operator.EncryptionInfo {
	return operator.EncryptionInfo{Enabled: a.keys.Enabled(), KeyID: a.keys.CurrentID(), Keys: a.keys.Len()}
}

// Audit steps of a rekey (audit.go).
const (
	stepRekeyStarted = "rekey_started"
	stepRekeyDone    = "rekey_done"
)

// rekeyTask is the one key of an app's rekey task: one rekey at a time.
const rekeyTask = ""

// StartRekey starts re-sealing every record under the first key, in the
// background; a rekey already running in this process is returned as it
// is (started false). A rekey cut short earlier under the same key is
// resumed. o paces the rekey started (a running one keeps its own pace).
// storage.ErrNoKey when no key is configured.
func (a *App) StartRekey(ctx context.Context, o storage.RekeyOptions) (storage.RekeyProgress, bool, error) {
	if !a.keys.Enabled() {
		return storage.RekeyProgress{}, false, storage.ErrNoKey
	}
	if err := o.Validate(); err != nil {
		return storage.RekeyProgress{}, false, err
	}
	st, err := a.Store()
	if err != nil {
		return storage.RekeyProgress{}, false, err
	}
	return a.rekey.start(rekeyTask, func() (storage.RekeyProgress, bool, error) {
		saved, err := st.RekeyState(ctx)
		if err != nil {
			return storage.RekeyProgress{}, false, err
		}
		p := storage.RekeyProgress{State: storage.RekeyRunning, KeyID: a.keys.CurrentID(), StartedAt: time.Now()}
		if saved.State != storage.RekeyDone && saved.KeyID == a.keys.CurrentID() {
			p = saved // resumed
			p.State = storage.RekeyRunning
			if saved.Failed == 0 {
				p.Error = ""
			}
		}
		// the audit trail names the key by its id, never the key
		a.audit(stepRekeyStarted, zap.String("key_id", a.keys.CurrentID()), zap.Int("keys", a.keys.Len()),
			zap.Bool("resumed", p.Scanned > 0))
		return p, true, nil
	}, func(ctx context.Context, _ storage.RekeyProgress, set func(storage.RekeyProgress)) storage.RekeyProgress {
		return a.runRekey(ctx, st.(*storage.SealingStore), o, set)
	})
}

func (a *App) runRekey(ctx context.Context, st *storage.SealingStore, o storage.RekeyOptions, set func(storage.RekeyProgress)) storage.RekeyProgress {
	p, err := st.Rekey(ctx, o, set)
	if err != nil {
		// saved as failed, with its cursor: the next start resumes it
		p.State, p.Error = storage.RekeyFailed, err.Error()
		if errors.Is(err, context.Canceled) {
			p.Error = "interrupted by a config reload or shutdown: start it again to resume it"
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if serr := st.SaveRekeyState(ctx, p); serr != nil {
			a.log.Error("saving the rekey's failure", zap.Error(serr))
		}
		cancel()
		a.log.Error("rekey failed", zap.Error(err), zap.Int("scanned", p.Scanned), zap.Int("resealed", p.Resealed))
	} else {
		a.audit(stepRekeyDone, zap.String("key_id", p.KeyID), zap.Int("scanned", p.Scanned),
			zap.Int("resealed", p.Resealed), zap.Int("failed", p.Failed))
	}
	return p
}

// RekeyStatus is the progress of the rekey running in this process, or
// else the last one saved in the store (any node's).
func (a *App) RekeyStatus(ctx context.Context) (storage.RekeyProgress, error) {
	if p, ok := a.rekey.get(rekeyTask); ok {
		return p, nil
	}
	st, err := a.Store()
	if err != nil {
		return storage.RekeyProgress{}, err
	}
	return st.RekeyState(ctx)
}
