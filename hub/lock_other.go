//go:build !unix

package hub

import "context"

// lockFile is a no-op where flock does not exist; the rename into blobs/ is
// still atomic, only two simultaneous downloads of one blob may both run.
func lockFile(ctx context.Context, path string) (unlock func(), err error) {
	return func() {}, ctx.Err()
}
