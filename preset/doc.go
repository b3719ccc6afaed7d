// Package preset holds ready-made Laya question sets and the email helpers
// that go with them, as laya-mlx ships them (laya_mlx/presets.py and
// email.py): TriageQuestions, EmailQuestions, GuardQuestions,
// ModerationQuestions and RouterQuestions, and EmailState/CleanEmailBody to
// build the state EmailQuestions reads. Like image/color/palette beside
// image/color, it is data for the core types of package laya, which never
// imports it.
//
//	res, err := agent.Predict(ctx, preset.EmailState(subject, body), preset.EmailQuestions())
package preset
