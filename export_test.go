package laya

// ValidateQuestions exposes the validation Predict runs first to the
// external tests of this directory (presets_valid_test.go).
func ValidateQuestions(qs Questions) error {
	_, err := prepareQuestions(qs)
	return err
}
