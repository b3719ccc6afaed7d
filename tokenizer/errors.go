package tokenizer

import "errors"

var (
	// ErrUnsupported reports a component type, option or regex feature of
	// tokenizer.json that this package does not implement.
	ErrUnsupported = errors.New("unsupported tokenizer component")
	// ErrInvalid reports a tokenizer.json or tokenizer_config.json that is
	// malformed: bad JSON, a missing field, a merge of unknown tokens.
	ErrInvalid = errors.New("invalid tokenizer file")
	// ErrMissingSpecial reports a role token (CLS, SEP, PAD, MASK) that
	// LoadDir could not resolve to an id.
	ErrMissingSpecial = errors.New("special token not found")
)
