//go:build !js

package state

import (
	"fmt"
	"maps"
	"slices"

	"github.com/cockroachdb/pebble/v2"
)

// clonePebble copies a Pebble backend through a Pebble checkpoint (hard
// links to its SST files) into cfg.Dir, as Flink's RocksDB backend takes
// its local checkpoints (RocksDB's Checkpoint::CreateCheckpoint). The
// memtable is flushed first: the WAL is off, so a checkpoint alone would not
// hold what is only in memory.
func clonePebble(b *pebbleBackend, cfg KeyedBackendConfig) (_ KeyedBackend, err error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if b.closed {
		return nil, fmt.Errorf("state: copy keyed backend: %w", ErrClosed)
	}
	if err := prepareDir(cfg.FS, cfg.Dir); err != nil {
		return nil, fmt.Errorf("state: copy keyed backend: %w", err)
	}
	nb := newPebbleBackend(cfg)
	defer func() {
		if err != nil {
			if nb.db != nil {
				_ = nb.db.Close()
			}
			_ = orOS(cfg.FS).RemoveAll(cfg.Dir)
		}
	}()
	if err := b.db.Flush(); err != nil {
		return nil, fmt.Errorf("state: copy keyed backend: flush memtable: %w", err)
	}
	if err := b.db.Checkpoint(nb.dbDir, pebble.WithFlushedWAL()); err != nil {
		return nil, fmt.Errorf("state: copy keyed backend: pebble checkpoint into %s: %w", nb.dbDir, err)
	}
	db, err := openPebble(cfg.FS, nb.dbDir, cfg.Logger, false)
	if err != nil {
		return nil, fmt.Errorf("state: copy keyed backend: open the copy in %s: %w", nb.dbDir, err)
	}
	nb.db = db
	nb.states = slices.Clone(b.states)
	nb.byName = maps.Clone(b.byName)
	nb.render = slices.Clone(b.render)
	setMetrics(nb, metricsOf(b))
	return nb, nil
}
