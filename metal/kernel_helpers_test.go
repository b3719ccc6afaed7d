package metal

import (
	"context"
	"errors"
	"testing"
)

// wantInvalidDispatch encodes one dispatch that must be refused before any GPU
// work (ErrInvalidDispatch), then finishes the command buffer cleanly.
func wantInvalidDispatch(t *testing.T, d Device, name string, encode func(CommandBuffer) error) {
	t.Helper()
	cb, err := d.NewCommandBuffer()
	if err != nil {
		t.Fatal(err)
	}
	if err := encode(cb); !errors.Is(err, ErrInvalidDispatch) {
		t.Errorf("%s: err = %v, want ErrInvalidDispatch", name, err)
	}
	cb.Commit()
	cb.Wait(context.Background())
}
