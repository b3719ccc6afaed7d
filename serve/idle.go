package serve

import "time"

// idleUnloader is a Models that can give an idle checkpoint's memory back; the next
// request that needs it loads it again (as LAYA_PRELOAD=0 does).
type idleUnloader interface {
	unloadIdle(idle time.Duration) (unloaded []string)
}

// startIdleUnload checks for idle checkpoints (upstream 0.3.25's
// LAYA_IDLE_UNLOAD_SECONDS) until shutdown. /ready stays 200 meanwhile: an unloaded
// checkpoint is one request's load away, as under a lazy start.
func (s *Server) startIdleUnload() {
	u, ok := s.models.(idleUnloader)
	if !ok || s.cfg.IdleUnload <= 0 {
		return
	}
	every := min(max(s.cfg.IdleUnload/4, 10*time.Millisecond), 5*time.Second)
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-s.batcher.stop:
				return
			case <-t.C:
				if !s.ready.Load() {
					continue // the preload and warm-up are not idleness
				}
				for _, name := range u.unloadIdle(s.cfg.IdleUnload) {
					s.log.Info("unloaded idle checkpoint", "model", name, "idle_s", s.cfg.IdleUnload.Seconds())
				}
			}
		}
	}()
}
