package embedded

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/hookline/hookline/storage/embedded/kv"
)

// Earlier versions kept the store in one bbolt file at the store's path;
// this one keeps a directory there. migrateFile moves the file's buckets
// into the directory once, at Open, in steps each of which a crash (kill
// -9) may cut short and the next Open finishes:
//
//  1. the file is copied into a new store at path+".new" (kv.MigrateFromBolt:
//     built aside in path+".new.migrating", synced, then renamed, so that
//     path+".new" is complete or absent);
//  2. the file is renamed to path+".bbolt", then path+".new" to path (the
//     directory synced after each);
//  3. once Open has opened the store at path, path+".bbolt" is removed
//     (retireMoved): the file's pages held every event it ever took,
//     erased ones' old versions included.
//
// What Open finds tells it where it was: a file at path, step 1 (a
// path+".new" found beside it is built again: the file may have been
// written since, by an earlier version); nothing at path but path+".new",
// step 2 half done; a directory at path, done (a path+".bbolt" left is
// removed once the store opens). A file at path with a path+".bbolt"
// beside it is refused: an earlier version started on a half-moved store,
// and which of the two holds the events is for a person to say. The file itself is only read
// until step 2 renames it. Processes of this version starting together
// take turns through a lock (path+".migrate", removed once done), and each
// reads the state again once it holds it.
const (
	migratedSuffix = ".new"
	retiredSuffix  = ".bbolt"
	lockSuffix     = ".migrate"
)

// migrateFile moves the bbolt file at path, if there is one, into a store
// directory at path (see above).
func migrateFile(path string, opts Options) error {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		// moved already; a lock a killed move left beside it goes (a
		// process waiting for it makes it again, and finds the move done)
		os.RemoveAll(path + lockSuffix)
		return nil
	}
	if !needsMove(path) {
		return nil // a new store
	}
	lockDir := path + lockSuffix
	lock, err := kv.LockDir(lockDir, opts.Timeout)
	if err != nil {
		return err
	}
	defer func() {
		lock.Close()
		// once moved, a process waiting for the lock makes it again, and
		// finds the move done
		if fi, err := os.Stat(path); err == nil && fi.IsDir() {
			os.RemoveAll(lockDir)
		}
	}()
	return moveFile(path, opts)
}

// needsMove reports whether path, which is not a directory, holds an
// earlier version's file or a move left half done.
func needsMove(path string) bool {
	for _, p := range []string{path, path + migratedSuffix, path + retiredSuffix} {
		if _, err := os.Stat(p); err == nil {
			return true
		}
	}
	return false
}

// moveFile is migrateFile's work, with the lock held.
func moveFile(path string, opts Options) error {
	fresh, retired := path+migratedSuffix, path+retiredSuffix
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if _, err := os.Stat(fresh); err == nil { // step 2 cut short after the file moved aside
			return renameSynced(fresh, path)
		}
		if _, err := os.Stat(retired); err == nil {
			// a retired file with no store beside it: only a hand can do
			// this; take it as the file to move, rather than start empty
			if err := renameSynced(retired, path); err != nil {
				return err
			}
			return moveFile(path, opts)
		}
		return nil // a new store
	case err != nil:
		return err
	case fi.IsDir():
		return nil // another process moved it meanwhile
	}
	if _, err := os.Stat(retired); err == nil {
		return fmt.Errorf("both %s and %s exist (an earlier version started on a store half moved to this one?): keep the one holding the events and remove the other", path, retired)
	}
	began := time.Now()
	if err := os.RemoveAll(fresh); err != nil {
		return err
	}
	st, err := kv.MigrateFromBolt(path, fresh, kv.Options{LockTimeout: opts.Timeout})
	if err != nil {
		return err
	}
	if err := renameSynced(path, retired); err != nil {
		return err
	}
	if err := renameSynced(fresh, path); err != nil {
		return err
	}
	if opts.OnMigrated != nil {
		opts.OnMigrated(st, time.Since(began))
	}
	return nil
}

// renameSynced renames from to to and syncs their directory, so that the
// rename survives a crash.
func renameSynced(from, to string) error {
	if err := os.Rename(from, to); err != nil {
		return err
	}
	return kv.SyncDir(filepath.Dir(to))
}

// retireMoved removes the bbolt file a move left beside the store at path
// (step 3), once the store has opened.
func retireMoved(path string) error { return removeRetired(path + retiredSuffix) }

// removeRetired removes the bbolt file a migration moved aside, if any.
func removeRetired(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing the migrated file: %w", err)
	}
	return nil
}
