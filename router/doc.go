// Package router sends each Laya request to the checkpoint suited to it
// (english, multilingual or typed-decisions), after upstream's router.py
// (NandhaKishorM/laya@cc61b5fd) and lang.py (0.3.29): the state's script
// first, its Latin-script language second (and, for a state that reads as
// English, each line and field on its own: Decision.Detection.MixedSegment),
// explicit model, task and language choices above both. Language codes that
// name no language (C, POSIX, C.UTF-8, und, zxx, mul) abstain and fall
// through to detection. It loads checkpoints lazily through
// laya.Load, keeps at most MaxLoaded resident (least recently used evicted,
// closed once no request uses them) and is safe for concurrent use.
//
//	r, err := router.New(router.WithLoadOptions(laya.WithBackend("cpu")))
//	res, err := r.Predict(ctx, laya.Text("Mein Konto wurde zweimal belastet."), questions, router.RouteOptions{})
//	fmt.Println(res.Routing.Model, res) // the answers' JSON with "routing" last
//
// WithModel, WithModels and Register add checkpoints of your own (a Hub id,
// org/name/sub@rev, or a local directory) under any name, loaded, evicted
// and unloaded like the built-ins and listed by Models; requests name them
// with RouteOptions.Model. Unregister removes one. PredictLong and
// PredictTournament run laya's long-state and many-label calls on the
// routed model.
//
// Route alone decides without loading anything (laya route does this).
// Acquire hands out a model held until its release, for callers that run
// passes themselves (laya serve's batches): an eviction meanwhile closes it
// after the release.
// The package imports laya; laya never imports it.
package router
