// Package laya runs Laya typed-decision models: one encoder pass answers
// choice, score and noul questions about a state.
//
//	agent, err := laya.Load(ctx, "path/to/checkpoint")
//	res, err := agent.Predict(ctx, laya.Text("I was charged twice"), questions)
//
// The output matches upstream Laya's JSON byte for byte.
package laya
