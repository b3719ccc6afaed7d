package hub

import "errors"

// Sentinel errors; every error this package returns wraps at most one of
// them, together with the repository, revision or file it concerns and a hint
// on what to do.
var (
	// ErrBadRef: a repository id, revision or subfolder that cannot name
	// anything on the Hub (or would escape the cache directory).
	ErrBadRef = errors.New("hub: bad repository reference")
	// ErrOffline: offline mode (HF_HUB_OFFLINE) and the files are not cached.
	ErrOffline = errors.New("hub: offline and not in cache")
	// ErrUnauthorized: the Hub answered 401 or 403 (private or gated repository,
	// or a missing/invalid HF_TOKEN).
	ErrUnauthorized = errors.New("hub: not authorized")
	// ErrRepoNotFound: the repository does not exist.
	ErrRepoNotFound = errors.New("hub: repository not found")
	// ErrRevisionNotFound: the repository exists but the branch, tag or commit does not.
	ErrRevisionNotFound = errors.New("hub: revision not found")
	// ErrFileNotFound: the revision lacks a file the checkpoint needs.
	ErrFileNotFound = errors.New("hub: file not found")
	// ErrHashMismatch: a downloaded file's sha256 differs from the Hub's LFS ETag.
	ErrHashMismatch = errors.New("hub: sha256 mismatch")
	// ErrSizeMismatch: a downloaded file's size differs from what the Hub announced.
	ErrSizeMismatch = errors.New("hub: size mismatch")
	// ErrServer: any other unexpected answer from the Hub.
	ErrServer = errors.New("hub: unexpected response")
)
