package state

func openPebbleBackend(cfg KeyedBackendConfig) (KeyedBackend, error) { return nil, ErrNotImplemented }
func restorePebbleBackend(cfg KeyedBackendConfig, _ CheckpointStorage, _ []*KeyedStateHandle) (KeyedBackend, error) {
	return nil, ErrNotImplemented
}
