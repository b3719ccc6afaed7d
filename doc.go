// Package laya runs Laya typed-decision models: one encoder pass answers
// choice, score and noul questions about a state, with answers equal to
// upstream Laya's (the PyTorch package laya, and laya-mlx) and JSON output
// identical to upstream's json.dumps, byte for byte. It needs no Python,
// MLX or cgo: the model runs on this module's CPU engine, or on Apple GPUs
// through its own Metal kernels.
//
//	agent, err := laya.Load(ctx, "convaiinnovations/laya") // or a checkpoint directory
//	if err != nil { … }
//	defer agent.Close()
//	res, err := agent.Predict(ctx, laya.Text("I was charged twice"), questions)
//	refund, err := res.Noul("refund")
//	fmt.Println(refund.Noul, res) // P(true), and upstream's JSON
//
// This comment is the package manual; the README is the user guide (CLI,
// checkpoints, what is verified where). Add-ons live in packages that import
// this one, never the reverse: router (which checkpoint a request goes to)
// and preset (ready-made question sets and email helpers). Beneath it are
// pyjson (Python-compatible JSON values), hub (the Hugging Face cache),
// backend (the op interface a compute backend implements) and lang (script
// and language detection).
//
// # Loading
//
// Load takes a checkpoint directory (rl_agent_config.json,
// model.safetensors, encoder/config.json, tokenizer/) or a Hugging Face Hub
// reference org/name[/subfolder][@revision], resolved through the shared HF
// cache and downloaded only when missing. The reference is the only place a
// revision or subfolder is given; WithHub passes a *hub.Client for the rest
// (endpoint, token, cache, offline, progress). A path that does not exist,
// does not start like a path (/, ./, ../, ~) and has the org/name shape is
// read as a Hub reference; write ./models/x for a local directory. Other
// options: WithBatchSize (question rows per forward batch, by default the
// backend's: 16, or on the cuda backend up to 64 rows and 8,192 tokens;
// speed and memory only, never answers beyond float rounding), WithBackend and
// WithBackendInstance (below).
//
// # States
//
// A State is what the questions are asked about: Text for a plain text, or
// any JSON value, serialized as upstream's json.dumps(state,
// ensure_ascii=False) before tokenizing. Key order and number literals are
// part of what the model reads, so build structured states with JSONState
// (raw JSON, order kept), or ValueState with pyjson.Object; StateOf converts a
// Go value, and sorts map keys because Go maps have no order. A state too
// long for the checkpoint's max_len keeps its beginning, except a list (a
// conversation), which keeps its newest turns, as upstream truncates.
//
// # Questions
//
// Questions is an ordered list of (id, definition) pairs; a definition is a
// JSON object in upstream's schema, built with ChoiceQuestion,
// ChoiceWithCriteria, ScoreQuestion, NoulQuestion, NoulWithCriteria,
// NoulWithLabels, or parsed with ParseQuestions / ParseRequest, which keep
// the order of questions and criteria. Predict validates every question
// before tokenizing anything, so a rejected request has no effect.
//
// # Requests
//
// A Request is a state, its questions and the settings upstream's predict()
// takes beside them: Lang (per-language calibration), MaxLen and HeadMaxLen
// (token windows), CountStateTokens. Predict is PredictRequest with none of
// them; PredictBatch answers several requests with shared forward passes,
// each answer the one PredictRequest gives for that request alone.
// ParseRequest reads a request from JSON text; ValueRequest builds it from a
// Value already decoded, as a server that checked the body's fields holds it.
//
// # Long states and many options
//
// A row holds max_len tokens and the question takes its share first, so
// Predict reads only the head of a long text (the newest turns of a
// conversation). PredictLong reads the whole state: each question scans it in
// windows as long as the room its row leaves, neighbours sharing
// LongOptions.Overlap tokens, the last flush with the end, at most
// LongOptions.MaxWindows per question (the scan budget, which also bounds how
// much of a hostile state is tokenized). All windows run in one pass over
// padded batches; a noul keeps its highest P(true), a score its highest level,
// a choice its most confident window; Result.Usage.Windows says how each
// question read the state. A state that fits is answered exactly as Predict
// answers it.
//
// Every option of a choice shares head_max_len, so a choice of many labels
// leaves each a few tokens. PredictTournament splits a choice of more than 16
// labels into groups of at most 16, answers every group in one pass and lets
// the winners meet in a final call; a label's probability is its share in its
// group times its group winner's share in the later rounds
// (Result.Usage.Tournament reports the rounds). The router has both
// (router.Router.PredictLong, PredictTournament).
//
// # Answers
//
// Predict returns a *Result. Result.Choice, Result.Score and Result.Noul
// return the typed answers (copies; the Result may be shared); Result.Type
// and Result.QuestionIDs list what is there. Every number is rounded as
// Python's round(x, 4), as upstream reports it.
//
//   - ChoiceAnswer: Choice is the most probable label; Probabilities are
//     calibrated (the checkpoint's temperature for the question type, or for
//     its option count, or for Request.Lang with PredictRequest) and
//     in criteria order; Confidence is 1 − normalised entropy (how
//     concentrated the distribution is); AnswerConfidence is the chosen
//     label's probability.
//   - ScoreAnswer: Score is the expected zero-based level Σ i·pᵢ over the
//     levels of the criteria list; Legend holds their descriptions.
//   - NoulAnswer: Noul is P(true); Confidence is max(p, 1−p).
//   - ActProbability (all three): the act head's probability that the
//     answer should be acted on rather than escalated.
//   - Result.Usage: InputTokens is the sum of the unpadded rows (one row per
//     question, the state in each); Options reports questions whose options
//     the token budget squeezed into shared spans, as upstream's
//     usage["options"].
//
// Result.String and Result.MarshalJSON give upstream's JSON text exactly
// (encoding/json.Marshal re-compacts it; call MarshalJSON for the bytes).
//
// # Errors
//
// Errors are checkable with errors.Is against these sentinels (each names
// its package: "laya: …", "pyjson: …"); where upstream has a message for the
// failure, the text is upstream's:
//
//   - ErrInvalidJSON (= pyjson.ErrInvalid), ErrInvalidRequest: the request
//     text is not JSON (a *pyjson.DecodeError worded as CPython's), or not
//     {"state": …, "questions": {…}}.
//   - ErrInvalidQuestion: a question upstream rejects. The error is a
//     *QuestionError whose QuestionID names the question and whose text is
//     upstream's message word for word ("question 'q': …"); ErrTooManyOptions
//     also matches when the options do not fit the token budget.
//   - ErrNotCheckpoint: Load was given something that is not a checkpoint
//     directory; hub errors (hub.ErrOffline, hub.ErrBadRef, …) wrapped for Hub
//     references; weights and tokenizer errors wrapped for a broken checkpoint.
//   - backend.ErrUnknownBackend: WithBackend named a backend this program
//     does not link; the message lists the ones it does and what the others
//     need.
//   - ErrUnknownQuestion, ErrWrongKind: a Result has no such question, or it
//     is of another type. ErrInvalidShortlist: a bad k or embedder output.
//   - ErrClosed: the Agent was closed. ErrNonFinite: the model produced NaN or
//     infinite outputs (a broken checkpoint or backend). Rows whose outputs
//     overflow a backend's own precision first run again in a wider one
//     where it has one (backend.Widener: the cuda backend's fp16 and fp16x2,
//     whose activations overflow past 65504, run such rows in float32), so
//     only outputs not finite there fail.
//   - A cancelled or expired context ends Load and Predict with ctx.Err(),
//     possibly wrapped: errors.Is(err, context.Canceled) holds.
//
// Hostile input fails with one of these errors, never a panic (a fuzz test
// drives arbitrary requests through the whole pipeline).
//
// # Structured decisions
//
// Package structured answers a JSON schema, or a Go struct, in one pass of any
// Predictor: structured.Decide and structured.DecideInto. ParseResult reads a result
// back from its JSON (a laya serve answer), for projection or for reading answers.
//
// # Backends
//
// The model runs on a backend (package backend) chosen by name with
// WithBackend:
//
//   - "auto", the default: "metal" on Apple Silicon when the GPU opens and
//     passes its self-test (a canary of every kernel against float64
//     references), else "cpu". Off darwin/arm64 that is always "cpu". When it
//     passes over "metal", Agent.Warnings says why in one line; Agent.Backend
//     names the backend that runs, and Agent.AutoChoice says what auto chose
//     and why, for programs. The order of candidates is one list in
//     package backend (OpenAuto); emulated and translated devices are never
//     among them.
//   - "cpu", the reference: float32 throughout, assembly GEMM on amd64 and
//     arm64. Always linked.
//   - "metal": Apple GPUs through this module's .metal kernels, called from
//     Go with purego. It is linked only on darwin/arm64
//     (backend_darwin_arm64.go imports backend/gpu), so that a Mac user
//     gets the GPU with no import beyond this package, while every other
//     program stays free of the Objective-C bindings and the Metal device
//     layer, which could not run there. WithBackend("metal") is the GPU or
//     an error: a GPU whose self-test fails is refused (gpu.ErrSelfTest),
//     never replaced. On it, Load also builds the pipelines the checkpoint's
//     forward passes dispatch (Agent.DeviceSetup).
//   - "metal-emu": the Metal backend on an MSL emulator (the same kernels
//     compiled with clang ≥ 16, GPU threads run on the CPU), for testing
//     kernels anywhere. It is slow and linked only by
//     import _ "github.com/laya-metal/laya/backend/metalemu", as cmd/laya and
//     the tests do; this package never links it.
//
// WithBackendInstance runs on a backend the caller opened (to share one
// device between agents, read its device time, or use an implementation
// nobody registered); the caller closes it, after the Agent.
//
// # Concurrency
//
// An Agent is safe for concurrent use (on the cpu, metal and cuda backends;
// cuda runs each call on a CUDA stream and graph entry of its own): each
// call runs its own backend stream, and calls share only the read-only
// weights. Close may be called while calls run: it waits for them, and
// later calls return ErrClosed. A Result is not modified after Predict
// returns, and its accessors return copies. router.Router is safe for
// concurrent use too.
//
// # Values
//
// Value (an alias of pyjson.Value) is the JSON value model shared by states,
// questions and results: Python-compatible (objects keep key order, repeated
// keys behave as in json.loads, NaN and Infinity are accepted, number
// literals are kept), so what the model reads and what Result prints match
// upstream exactly. Package pyjson reads one (pyjson.Parse, with syntax
// errors worded as CPython's) and builds them (pyjson.Object, pyjson.Array,
// pyjson.String, pyjson.Int, pyjson.Float, pyjson.Bool, pyjson.Null,
// pyjson.ValueOf); ErrInvalidJSON is pyjson.ErrInvalid.
package laya
