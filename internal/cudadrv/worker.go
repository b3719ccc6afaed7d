package cudadrv

import "runtime"

// Worker runs functions on one goroutine locked to its OS thread: a CUDA
// context is current per thread, so every call that needs the context runs
// through the Worker that made it current.
type Worker struct{ ch chan func() }

// NewWorker starts the goroutine; it lives as long as the program (a CUDA
// user opens few devices, and a stopped worker would leave its thread's
// context in an unknown state).
func NewWorker() *Worker {
	w := &Worker{ch: make(chan func())}
	go func() {
		runtime.LockOSThread()
		for f := range w.ch {
			f()
		}
	}()
	return w
}

// Do runs f on the worker's thread and waits for it.
func (w *Worker) Do(f func()) {
	done := make(chan struct{})
	w.ch <- func() { f(); close(done) }
	<-done
}
