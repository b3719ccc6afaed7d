// Package mcp serves Laya to LLM agents over the Model Context Protocol (the
// github.com/modelcontextprotocol/go-sdk server), as upstream's laya-mcp-server does
// (NandhaKishorM/laya laya/mcp/).
//
// The tools:
//
//   - laya_predict: typed questions (choice, score, noul) about a state, one pass.
//   - laya_predict_batch: several {state, questions, model} requests, results in order.
//   - laya_route: which checkpoint would answer, and why, without running one.
//   - laya_shortlist: many-option choices cut to their k likeliest labels by the
//     checkpoint's own embeddings, then answered (in-process backends only).
//   - laya_decide: a JSON schema answered in one pass (structured.PlanSchema's subset),
//     values in the schema's shape with per-field confidence.
//
// Arguments are read in the order the client wrote them: a choice's options keep
// their order (option_order), which the model's answer depends on. A failed call is a
// tool result with isError set and {"error": code, "message": ...} as its text.
//
// A Backend answers the tools: Local(router) loads the checkpoints into this
// process; Remote(baseURL, apiKey, client) asks a running laya serve over HTTP
// (upstream LAYA_BASE_URL), so that every MCP client does not hold its own copy.
//
//	s := mcp.NewServer(mcp.Local(r), version)
//	err := s.Run(ctx, &sdkmcp.StdioTransport{})
//
// The laya mcp command wires this to stdio, or to streamable HTTP with --http.
package mcp
