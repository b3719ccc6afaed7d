// Package router sends each Laya request to the checkpoint suited to it
// (english, multilingual or typed-decisions), after laya-mlx's router: the
// state's script first, its Latin-script language second, explicit model,
// task and language choices above both. It loads checkpoints lazily through
// laya.Load, keeps at most MaxLoaded resident (least recently used evicted,
// closed once no request uses them) and is safe for concurrent use.
//
//	r, err := router.New(router.WithLoadOptions(laya.WithBackend("cpu")))
//	res, err := r.Predict(ctx, laya.Text("Mein Konto wurde zweimal belastet."), questions, router.RouteOptions{})
//	fmt.Println(res.Routing.Model, res) // the answers' JSON with "routing" last
//
// Route alone decides without loading anything (laya route does this).
// Acquire hands out a model held until its release, for callers that run
// passes themselves (laya serve's batches): an eviction meanwhile closes it
// after the release.
// The package imports laya; laya never imports it.
package router
