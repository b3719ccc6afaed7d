package weights

// Checkpoint is a loaded Laya checkpoint directory.
type Checkpoint struct{}
