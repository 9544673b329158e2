//go:build js

package state

// fullSnapshotPebble: no Pebble backend under GOOS=js.
func fullSnapshotPebble(KeyedBackend, int64, CheckpointStorage) (*KeyedStateHandle, bool, error) {
	return nil, false, nil
}
