package state

import "github.com/statelab/statelab/rescale"

// stubBackend stands in for the backends while they are being written; every
// call returns ErrNotImplemented.
type stubBackend struct{ cfg KeyedBackendConfig }

var _ rawBackend = (*stubBackend)(nil)

func newHeapBackend(cfg KeyedBackendConfig) KeyedBackend { return &stubBackend{cfg: cfg} }
func restoreHeapBackend(cfg KeyedBackendConfig, _ CheckpointStorage, _ []*KeyedStateHandle) (KeyedBackend, error) {
	return nil, ErrNotImplemented
}
func openPebbleBackend(cfg KeyedBackendConfig) (KeyedBackend, error) { return nil, ErrNotImplemented }
func restorePebbleBackend(cfg KeyedBackendConfig, _ CheckpointStorage, _ []*KeyedStateHandle) (KeyedBackend, error) {
	return nil, ErrNotImplemented
}
func newStorage(cfg StorageConfig) (CheckpointStorage, error) { return nil, ErrNotImplemented }

func (s *stubBackend) Kind() BackendKind                            { return s.cfg.Kind }
func (s *stubBackend) MaxParallelism() int                          { return s.cfg.MaxParallelism }
func (s *stubBackend) KeyGroupRange() rescale.KeyGroupRange         { return s.cfg.KeyGroupRange }
func (s *stubBackend) SetCurrentKey(key []byte, keyGroup int) error { return ErrNotImplemented }
func (s *stubBackend) CurrentKey() ([]byte, int)                    { return nil, -1 }
func (s *stubBackend) States() []StateInfo                          { return nil }
func (s *stubBackend) Entries(rescale.KeyGroupRange, int) ([]Entry, error) {
	return nil, ErrNotImplemented
}
func (s *stubBackend) KeyGroupMetrics() ([]KeyGroupMetrics, error) { return nil, ErrNotImplemented }
func (s *stubBackend) Metrics() (BackendMetrics, error)            { return BackendMetrics{}, ErrNotImplemented }
func (s *stubBackend) Snapshot(SnapshotTarget, CheckpointStorage) (*KeyedStateHandle, error) {
	return nil, ErrNotImplemented
}
func (s *stubBackend) NotifyCheckpointComplete(int64) {}
func (s *stubBackend) NotifyCheckpointAborted(int64)  {}
func (s *stubBackend) Close() error                   { return nil }
func (s *stubBackend) register(string, StateKind, renderer) (stateID, error) {
	return 0, ErrNotImplemented
}
func (s *stubBackend) get(stateID, []byte) ([]byte, bool, error) {
	return nil, false, ErrNotImplemented
}
func (s *stubBackend) put(stateID, []byte, []byte) error { return ErrNotImplemented }
func (s *stubBackend) appendValue(stateID, []byte) error { return ErrNotImplemented }
func (s *stubBackend) remove(stateID, []byte) error      { return ErrNotImplemented }
func (s *stubBackend) iterate(stateID, func([]byte, []byte) bool) error {
	return ErrNotImplemented
}
func (s *stubBackend) clear(stateID) error { return ErrNotImplemented }
